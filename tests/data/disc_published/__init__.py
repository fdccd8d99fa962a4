"""A registration function that makes a primitive and stores it on the class it is handed, applied at import."""
