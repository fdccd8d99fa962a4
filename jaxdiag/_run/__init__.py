"""Child side, one target: the engine (load, choose inputs, find nested subjects, run the checks, filter), containment
of user code, fresh draws, relocation, exposure, repro scripts, views."""
