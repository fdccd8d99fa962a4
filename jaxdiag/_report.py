"""Plain data: what the checks found. No JAX, no rendering."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
CHECK_STATUSES = ("passed", "failed", "skipped", "error")


@dataclass(frozen=True)
class Location:
    path: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Finding:
    code: str
    name: str
    severity: str
    message: str
    fix: str = ""
    location: Location | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["location"] = asdict(self.location) if self.location else None
        return data

    def sort_key(self) -> tuple:
        return (SEVERITY_ORDER[self.severity], self.code, self.message)


@dataclass
class CheckResult:
    name: str
    status: str
    seconds: float
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 4), "detail": self.detail}


@dataclass
class TargetReport:
    target: str
    kind: str
    inputs: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    module: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "kind": self.kind,
            "inputs": list(self.inputs),
            "checks": [c.to_dict() for c in self.checks],
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Report:
    targets: list[TargetReport] = field(default_factory=list)
    jaxdiag_version: str = ""
    jax_version: str = ""

    @property
    def findings(self) -> list[Finding]:
        return [f for t in self.targets for f in t.findings]

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def summary(self) -> dict[str, int]:
        return {
            "targets": sum(1 for t in self.targets if t.kind not in ("module", "config")),  # module/config entries only hold notes
            "errors": self.count("error"),
            "warnings": self.count("warning"),
            "infos": self.count("info"),
        }

    @property
    def ok(self) -> bool:
        """No error or warning remains (after select/ignore and suppressions)."""
        return self.count("error") == 0 and self.count("warning") == 0

    @property
    def internal_errors(self) -> list[CheckResult]:
        return [c for t in self.targets for c in t.checks if c.status == "error"]

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def raise_if_failed(self) -> None:
        """Raise AssertionError carrying the same text the CLI prints, if any error or warning remains."""
        if not self.ok:
            from ._render.text import render_plain

            raise AssertionError("jaxdiag found problems:\n" + render_plain(self))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": 1,
            "jaxdiag_version": self.jaxdiag_version,
            "jax_version": self.jax_version,
            "targets": [t.to_dict() for t in self.targets],
            "summary": self.summary,
        }

    def merge(self, other: "Report") -> "Report":
        return Report(self.targets + other.targets, self.jaxdiag_version, self.jax_version)
