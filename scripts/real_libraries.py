"""Reproduce the "real libraries" table of docs/real-libraries.md: `jaxdiag check` on published JAX libraries.

    pip install -c <(printf 'jax==0.10.2\\njaxlib==0.10.2\\n') equinox==0.13.8 optax==0.2.8 jaxopt==0.8.5 \\
        lineax==0.1.1 optimistix==0.1.0 diffrax==0.7.2 distrax==0.1.9 numpyro==0.22.0 e3nn-jax==0.21.0 \\
        jax-md==0.2.29 quadax==0.3.1 jaxoplanet==0.2.0 flax==0.12.8 jax-galsim==2026.7.0   # beside jaxdiag
    python scripts/real_libraries.py [--only NAME ...] [--timeout S] [--json ROWS] [--keep-reports DIR] [--no-record]
    python scripts/real_libraries.py --from-json ROWS ...   # the table from saved rows

Not part of the test suite (it needs the libraries installed and takes minutes). For each library that is
installed: where the library ships examples, `jaxdiag record -- python -c ...` runs a small use of its public API
first so that recorded calls supply bind params and inputs; then `jaxdiag check PACKAGE --keep-going --format json`
runs in a scratch folder. The table counts discovered targets (`summary.targets`), checked targets (at least one
check ran; "(N abstract)": N of them cannot run on this platform, a GPU kernel on CPU, and were checked by tracing
only, JXN013), findings by severity, the wall time, and lists why each unchecked target was not checked.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

# Small uses of each library's public API, run under `jaxdiag record` before the check (the libraries ship no
# examples or tests in their wheels): they supply bind params, static arguments and value ranges. Each is written
# as a module `jaxdiag_example_<package>.py` in the scratch folder and run as `import ...; main()`, so its
# module-level functions that take arrays can carry a rule whose own arguments cannot be written to a file (a
# callable, a treedef, a solver object): `jaxdiag check` re-runs such a function and checks the rule inside it.
SNIPPETS: dict[str, str] = {
    'equinox': """
import jax, jax.numpy as jnp, equinox as eqx
import equinox.internal as eqxi

def checked(x): return eqx.error_if(x, x > 10, "too big")
def body(c): return c[0] + 1, c[1] * 0.5
def loop_grad(x):
    return jax.grad(lambda v: eqxi.while_loop(lambda c: c[0] < 3, body, (0, v), max_steps=5,
                                              kind="checkpointed")[1].sum())(x)
def buffered_loop(x):  # writes into a loop buffer: maybe_set_p (and _vprim_p under vmap)
    def step(c):
        i, buf = c
        return i + 1, buf.at[i].set(x[i] * 2.0)
    return eqxi.while_loop(lambda c: c[0] < 3, step, (0, jnp.zeros(3)), max_steps=3, buffers=lambda c: c[1],
                           kind="checkpointed")[1]
def batched_buffered_loop(xs): return jax.vmap(buffered_loop)(xs)
def backward_nan(x): return eqx.debug.backward_nan(x)
def announced(x): return eqx.debug.announce_transform(x, name="demo", announce=lambda s: None)
def nontraceable(x): return eqxi.nontraceable(x, name="demo")
def nondifferentiable_backward(x): return eqxi.nondifferentiable_backward(x, msg="no grad here")
def noinline_double(x): return eqxi.noinline(lambda v: v * 2)(x)

def main():
    x = jnp.array([1.0, -2.0, 3.0])
    print(checked(x), eqxi.nondifferentiable(x))
    print(jax.vmap(lambda v: eqxi.unvmap_max(v))(x), eqxi.unvmap_any(x > 0), eqxi.unvmap_all(x > 0))
    print(noinline_double(x), loop_grad(x), buffered_loop(x), batched_buffered_loop(jnp.stack([x, 2 * x])))
    print(jax.grad(lambda v: backward_nan(v).sum())(x), announced(x), nontraceable(x), nondifferentiable_backward(x))
    print(eqxi.nextafter(x), eqxi.prevbefore(x))
""",
    'jaxopt': """
import jax, jax.numpy as jnp
from jaxopt import projection

def main():
    x = jnp.array([0.3, -1.2, 2.0, 0.5])
    print(projection.projection_sparse_simplex(x, 2),
          jax.jacobian(lambda v: projection.projection_sparse_simplex(v, 2))(x))
    print(projection.projection_simplex(x))
""",
    'lineax': """
import jax, jax.numpy as jnp, lineax as lx

def solve(A, b): return lx.linear_solve(lx.MatrixLinearOperator(A), b).value

def main():
    A = jnp.array([[3.0, 1.0], [1.0, 2.0]]); b = jnp.array([1.0, -1.0])
    print(solve(A, b), jax.grad(lambda bb: solve(A, bb).sum())(b))
""",
    'optimistix': """
import jax, jax.numpy as jnp, optimistix as optx

def fn(y, args): return y**2 - args
def root(a): return optx.root_find(fn, optx.Newton(rtol=1e-6, atol=1e-6), jnp.array(1.0), args=a).value

def main():
    print(root(jnp.array(2.0)), jax.grad(root)(2.0))
""",
    'e3nn-jax': """
import jax, jax.numpy as jnp, e3nn_jax as e3nn
# e3nn's custom_jvp `einsum` is called only by `e3nn_jax._src.legacy`, which does not import on this jax: use it
# directly, as the legacy tensor product does
from e3nn_jax._src.utils.einsum import einsum

def main():
    x = e3nn.IrrepsArray('1o', jnp.array([0.1, 0.2, 0.3]))
    print(e3nn.spherical_harmonics('0e+1o+2e', x, True))
    print(e3nn.sus(jnp.array([-1.0, 0.5])), e3nn.soft_one_hot_linspace(jnp.array([0.2]), start=0., end=1., number=4,
                                                                       basis='cosine', cutoff=True))
    a, b = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([0.5, -1.0])
    print(einsum('ij,j->i', a, b), jax.grad(lambda v: einsum('ij,j->i', a, v).sum())(b))
""",
    'optax': """
import jax, jax.numpy as jnp, optax

def main():
    print(optax.safe_norm(jnp.array([3.0, 4.0]), 1e-6), jax.grad(lambda x: optax.safe_norm(x, 1e-6))(jnp.ones(3)))
    print(optax.safe_root_mean_squares(jnp.array([3.0, 4.0]), 1e-6))
""",
    'jax-md': """
import jax, jax.numpy as jnp
from jax_md import rigid_body, space

def main():
    q = rigid_body.Quaternion(jnp.array([0.9, 0.1, 0.2, 0.3]) / jnp.linalg.norm(jnp.array([0.9, 0.1, 0.2, 0.3])))
    print(rigid_body.quaternion_rotate(q, jnp.array([1.0, 0.0, 0.5])))
    disp, shift = space.periodic_general(jnp.eye(3) * 5.0)
    print(disp(jnp.array([0.1, 0.2, 0.3]), jnp.array([0.4, 0.1, 0.2])))
""",
    'numpyro': """
import jax, jax.numpy as jnp
import numpyro.distributions as dist

def main():
    print(dist.TruncatedNormal(0.0, 1.0, low=-1.0).log_prob(jnp.array([0.5, 0.2])))
    print(jax.grad(lambda s: dist.TruncatedNormal(0.0, s, low=-1.0).log_prob(0.5))(1.0))
    print(dist.VonMises(0.0, 2.0).sample(jax.random.PRNGKey(0), (3,)))
""",
    'quadax': """
import jax, jax.numpy as jnp, quadax

def integrand(t, a): return jnp.sin(a * t)
def integral(a): return quadax.quadgk(integrand, jnp.array([0.0, 1.0]), args=(a,))[0]
def leibniz_integral(a):  # the Leibniz adjoint binds _leibniz_p under differentiation
    return quadax.quadgk(integrand, jnp.array([0.0, 1.0]), args=(a,), adjoint=quadax.LeibnizAdjoint())[0]
def romberg_integral(a):  # Romberg's frozen discretization goes through _leibniz_p under the default adjoint
    return quadax.romberg(integrand, jnp.array([0.0, 1.0]), args=(a,))[0]

def main():
    for f in (integral, leibniz_integral, romberg_integral):
        print(f(jnp.array(2.0)), jax.grad(f)(2.0))
""",
    'jaxoplanet': """
import jax, jax.numpy as jnp
from jaxoplanet.core import kepler, light_curve

def transit(b):  # a limb-darkened light curve: the quadrature terms come from `_p_integral` (static order, l_max)
    return light_curve(jnp.array([0.1, 0.4, 0.05]), b, jnp.array(0.1), order=20)

def main():
    print(kepler(jnp.array([0.1, 1.0, 2.0]), jnp.array([0.1, 0.1, 0.1])))
    b = jnp.array([0.0, 0.5, 1.05])  # centred, inside the disk, grazing
    print(transit(b), jax.grad(lambda v: transit(v).sum())(b))
""",
    'diffrax': """
import jax, jax.numpy as jnp, diffrax

def vector_field(t, y, args): return -y
def solve(y0):
    return diffrax.diffeqsolve(diffrax.ODETerm(vector_field), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0,
                               adjoint=diffrax.BacksolveAdjoint()).ys.sum()

def main():
    print(solve(jnp.array([1.0, 2.0])), jax.grad(solve)(jnp.array([1.0, 2.0])))
""",
    'flax': """
import jax, jax.numpy as jnp
from flax.linen import fp8_ops

MATMUL = (((1,), (0,)), ((), ()))
def scaled_dot(a, b, scale, history):  # quantized_dot with its static dimension_numbers and preferred type
    return fp8_ops.fp8_scaled_dot_general(a, b, MATMUL, preferred_element_type=jnp.float32, lhs_scale=scale,
                                          rhs_scale=scale, grad_scale=scale, lhs_amax_history=history,
                                          rhs_amax_history=history, grad_amax_history=history)

def main():
    x, scale, history = jnp.array([0.5, -1.5, 2.0]), jnp.array(1.0), jnp.zeros(4)
    print(fp8_ops.in_qdq(jnp.float32, jnp.float8_e4m3fn, x, scale, history))
    print(fp8_ops.out_qdq(jnp.float32, jnp.float8_e5m2, x, scale, history))
    print(jax.grad(lambda v: fp8_ops.out_qdq(jnp.float32, jnp.float8_e5m2, fp8_ops.in_qdq(
        jnp.float32, jnp.float8_e4m3fn, v, scale, history), scale, history).sum())(x))
    print(fp8_ops.in_q(jnp.float32, jnp.float8_e4m3fn, x, scale, history))
    print(fp8_ops.out_dq(jnp.float32, scale, scale, x))
    a, b = jnp.array([[1.0, 2.0], [3.0, -1.0]]), jnp.array([[0.5, 1.0], [-1.0, 2.0]])
    print(scaled_dot(a, b, scale, history), jax.grad(lambda v: scaled_dot(v, b, scale, history).sum())(a))
    print(fp8_ops.dot_general_with_precision(a, b, MATMUL),
          jax.grad(lambda v: fp8_ops.dot_general_with_precision(v, b, MATMUL).sum())(a))
""",
    'distrax': """
import jax, jax.numpy as jnp, distrax

def main():
    d = distrax.VonMises(0.0, 2.0)
    print(d.cdf(jnp.array([0.5, -0.3])), jax.grad(lambda c: distrax.VonMises(0.0, c).cdf(0.5))(2.0))
    print(d.sample(seed=jax.random.PRNGKey(0), sample_shape=(3,)))
""",
}

# `[tool.jaxdiag]` written into the scratch folder's pyproject.toml before the check, for targets whose inputs no
# example can record. jax-md's UMA kernels (`jax_md._nn.uma.kernels`) run only on GPU (jax-md binds them only when
# `jax.default_backend() == 'gpu'`): their bind params and the kernels' shape contract (9 coefficients, [E, 9, 9]
# Wigner matrices, edge_index [2, E]) are read from jax-md's own abstract evals; on CPU they are checked abstractly.
_UMA = "jax_md._nn.uma.kernels"
_SEG = ["f32[8,4]", "f32[2,3,4]", "i32[2]", "i32[2]"]  # x [N, I], weights [B, O, I], sizes [B], starts [B]
_SEG_DX = ["f32[8,3]", "f32[2,3,4]", "i32[2]", "i32[2]"]  # grad_y [N, O], weights, sizes, starts
_SEG_DW = ["f32[8,4]", "f32[8,3]", "i32[2]", "i32[2]"]  # x, grad_y, sizes, starts
_N2E = ["f32[4,9,8]", "i32[2,6]", "f32[6,9,9]"]  # x [nodes, 9, C], edge_index [2, E], wigner [E, 9, 9]
_E2N = ["f32[6,9,16]", "i32[2,6]", "f32[6,9,9]"]  # messages [E, 9, C'], edge_index, wigner


def _target(name: str, args: list[str], params: str = "") -> str:
    quoted = ", ".join(f'"{a}"' for a in args)
    table = f'[tool.jaxdiag.targets."{_UMA}:{name}"]\nargs = [{quoted}]\n'
    return table + (f"params = {{{params}}}\n" if params else "")


PYPROJECTS: dict[str, str] = {
    'jax-md': "\n".join([
        _target("segment_mm_p", _SEG, "max_size = 8"),
        _target("segment_mm_jvp_p", _SEG + ["f32[8,4]", "f32[2,3,4]"], "max_size = 8"),
        _target("segment_mm_bwd_dx_p", _SEG_DX, "max_size = 8"),
        _target("segment_mm_bwd_dx_jvp_p", _SEG_DX + ["f32[8,3]", "f32[2,3,4]"], "max_size = 8"),
        _target("segment_mm_bwd_dweights_p", _SEG_DW, "weights_shape = [2, 3, 4], max_size = 8"),
        _target("segment_mm_bwd_dweights_jvp_p", _SEG_DW + ["f32[8,4]", "f32[8,3]"],
                "weights_shape = [2, 3, 4], max_size = 8"),
        _target("_segment_mm_2d", ["f32[8,4]", "f32[2,3,4]", "i32[2]"]),
        _target("node_to_edge_p", _N2E),
        _target("node_to_edge_jvp_p", _N2E + ["f32[4,9,8]", "f32[6,9,9]"]),
        _target("node_to_edge_backward_p", _N2E + ["f32[6,9,16]"]),
        _target("node_to_edge_backward_jvp_p", _N2E + ["f32[6,9,16]", "f32[4,9,8]", "f32[6,9,9]", "f32[6,9,16]"]),
        _target("edge_to_node_p", _E2N, "num_nodes = 4"),
        _target("edge_to_node_jvp_p", _E2N + ["f32[6,9,16]", "f32[6,9,9]"], "num_nodes = 4"),
        _target("edge_to_node_backward_p", _E2N + ["f32[4,9,16]"], "num_nodes = 4"),
        _target("edge_to_node_backward_jvp_p", _E2N + ["f32[4,9,16]", "f32[6,9,16]", "f32[6,9,9]", "f32[4,9,16]"],
                "num_nodes = 4"),
    ]),
}

# (distribution, package to check)
LIBRARIES: list[tuple[str, str]] = [
    ('equinox', 'equinox'),
    ('optax', 'optax'),
    ('jaxopt', 'jaxopt'),
    ('lineax', 'lineax'),
    ('optimistix', 'optimistix'),
    ('diffrax', 'diffrax'),
    ('distrax', 'distrax'),
    ('numpyro', 'numpyro'),
    ('e3nn-jax', 'e3nn_jax'),
    ('jax-md', 'jax_md'),
    ('quadax', 'quadax'),
    ('jaxoplanet', 'jaxoplanet'),
    ('flax', 'flax'),
    ('jax-galsim', 'jax_galsim'),
]


@dataclass
class Row:
    name: str
    version: str = ""
    targets: int = 0
    checked: int = 0
    abstract: int = 0  # checked by tracing only (JXN013: the kernel cannot run on this platform)
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    import_failures: int = 0
    seconds: float = 0.0
    exit_code: int = 0
    recorded: int = 0
    reasons: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    elsewhere: list[str] = field(default_factory=list)  # errors/warnings located in another library's files


def _jaxdiag() -> list[str]:
    return [sys.executable, "-m", "jaxdiag"]


_TIMED_OUT = 124  # the exit code a library's row gets when its run was stopped at the timeout (as `timeout(1)`)


def _run(command: list[str], cwd: str, timeout: float) -> tuple[int, str]:
    """(exit code, stderr) of a jaxdiag command run in `cwd` (stdout discarded: the report goes to a file). At the
    timeout it is stopped with SIGTERM first, so its supervisor stops its child's whole process group (a SIGKILL
    left a worker busy for minutes), and killed only if it lingers; then TimeoutExpired is raised.

    The per-user cache folder is the scratch folder's own: a library without a pyproject.toml would otherwise use
    `~/.cache/jaxdiag`, whose compiled programs from an earlier sweep make a row fast on the second run only (the
    figures are cold runs, as a user's first)."""
    env = {**os.environ, "XDG_CACHE_HOME": os.path.join(cwd, ".cache")}
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        _, stderr = process.communicate(timeout=timeout)
        return process.returncode, stderr
    except subprocess.TimeoutExpired:
        process.terminate()
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        raise


def run_library(dist: str, package: str, snippet: str, timeout: float, keep: str | None = None) -> Row:
    row = Row(dist, version=importlib.metadata.version(dist))
    with tempfile.TemporaryDirectory(prefix=f"jaxdiag-{package}-") as scratch:
        start = time.perf_counter()
        if dist in PYPROJECTS:
            with open(os.path.join(scratch, "pyproject.toml"), "w", encoding="utf-8") as handle:
                handle.write("[tool.jaxdiag]\n\n" + PYPROJECTS[dist])
        if snippet:
            example = f"jaxdiag_example_{package}"
            with open(os.path.join(scratch, f"{example}.py"), "w", encoding="utf-8") as handle:
                handle.write(snippet)
            try:
                _run(_jaxdiag() + ["record", "--", sys.executable, "-c", f"import {example}; {example}.main()"],
                     scratch, timeout)
            except subprocess.TimeoutExpired:
                row.reasons.append(f"recording timed out after {timeout:.0f} s")
            try:
                with open(os.path.join(scratch, ".jaxdiag", "calls.json"), encoding="utf-8") as handle:
                    row.recorded = len(json.load(handle)["calls"])
            except (OSError, ValueError, KeyError):
                row.recorded = 0
        report = os.path.join(scratch, "report.json")  # not stdout: the libraries themselves may print
        try:
            returncode, stderr = _run(_jaxdiag() + ["check", package, "--keep-going", "--format", "json",
                                            "--output", report], scratch, timeout)
        except subprocess.TimeoutExpired:
            row.seconds = time.perf_counter() - start
            row.exit_code = _TIMED_OUT
            row.reasons.append(f"timed out after {timeout:.0f} s")
            return row
        row.seconds = time.perf_counter() - start
        row.exit_code = returncode
        if keep and os.path.exists(report):  # the whole report: findings located in other libraries' files too
            os.makedirs(keep, exist_ok=True)
            shutil.copy(report, os.path.join(keep, f"{package}.json"))
        try:
            with open(report, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            row.reasons.append(f"exit {returncode}: {stderr.strip().splitlines()[-1:]}")
            return row
    # the example module's own functions are not the library's targets (the library rules found inside them are
    # reported under the rule's own name, "... (inside jaxdiag_example_...)", and counted)
    counted = [t for t in data["targets"] if t["kind"] not in ("module", "config")
               and not t["target"].startswith("jaxdiag_example_")]
    row.targets = len(counted)
    for t in counted:
        ran = any(c["status"] in ("passed", "failed") for c in t["checks"])
        row.checked += ran
        row.abstract += ran and any(f["code"] == "JXN013" for f in t["findings"])
        if not ran:
            why = next((f["message"] for f in t["findings"] if f["severity"] == "info"),
                       "; ".join(c["detail"] for c in t["checks"]) or "no check applied")
            row.reasons.append(f"{t['target']}: {why}")
    seen: set[tuple] = set()
    for t in data["targets"]:
        for p in t.get("problems", []):
            row.import_failures += 1
            row.reasons.append(f"{t['target']}: {p.get('kind', 'problem')}: {p.get('message', '')[:200]}")
        for f in t["findings"]:
            where = f.get("location") or {}
            # one rule seen through several example functions is one finding; a finding located in the example
            # module itself is about the example, not the library
            key = (f["code"], where.get("path"), where.get("line"), f["severity"] == "info" and t["target"])
            if key in seen or "jaxdiag_example_" in str(where.get("path", "")):
                continue
            if f["severity"] != "info" and where.get("path") and not _in_package(where["path"], package):
                # another library's rule met inside an example function: counted in its own row, listed here
                row.elsewhere.append(f"{t['target']}: {f['code']} at {where['path']}:{where.get('line')}: "
                                     f"{f['message'][:160]}")
                continue
            seen.add(key)
            if f["severity"] == "error":
                row.errors += 1
            elif f["severity"] == "warning":
                row.warnings += 1
            else:
                row.infos += 1
            if f["severity"] in ("error", "warning"):
                row.findings.append(f"{t['target']}: {f['code']} {f['message'][:200]}")
    return row


def _in_package(path: str, package: str) -> bool:
    return f"/{package}/" in "/" + path.replace(os.sep, "/")


def markdown(rows: list[Row]) -> str:
    lines = ["| library | version | targets | checked | errors | warnings | notes | modules not imported | "
             "recorded calls | time |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        checked = f"{r.checked} ({r.abstract} abstract)" if r.abstract else f"{r.checked}"
        lines.append(f"| {r.name} | {r.version} | {r.targets} | {checked} | {r.errors} | {r.warnings} | {r.infos} "
                     f"| {r.import_failures} | {r.recorded} | {r.seconds:.0f} s |")
    total = sum(r.targets for r in rows)
    checked = sum(r.checked for r in rows)
    abstract = sum(r.abstract for r in rows)
    lines.append(f"| **total** | | {total} | {checked} ({100 * checked / max(total, 1):.0f}%"
                 f"{f'; {abstract} abstract' if abstract else ''}) | "
                 f"{sum(r.errors for r in rows)} | {sum(r.warnings for r in rows)} | {sum(r.infos for r in rows)} | "
                 f"{sum(r.import_failures for r in rows)} | "
                 f"{sum(r.recorded for r in rows)} | {sum(r.seconds for r in rows):.0f} s |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", default=None, help="distribution names to run")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per library")
    parser.add_argument("--json", default=None, help="also write the rows (with reasons and findings) here")
    parser.add_argument("--keep-reports", default=None, metavar="DIR",
                        help="copy each library's full `jaxdiag check` JSON report to DIR/PACKAGE.json")
    parser.add_argument("--no-record", action="store_true",
                        help="skip the recording step: `jaxdiag check` alone, as a first run without examples")
    parser.add_argument("--from-json", nargs="*", default=None,
                        help="print the table of rows saved by earlier --json runs (in LIBRARIES order)")
    args = parser.parse_args()
    if args.from_json is not None:
        saved = {}
        for path in args.from_json:
            with open(path, encoding="utf-8") as handle:
                saved.update({r["name"]: Row(**r) for r in json.load(handle)})
        print(markdown([saved[d] for d, _ in LIBRARIES if d in saved]))
        return 0
    rows = []
    for dist, package in LIBRARIES:
        snippet = "" if args.no_record else SNIPPETS.get(dist, "")
        if args.only and dist not in args.only:
            continue
        try:
            importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            print(f"skipping {dist}: not installed", file=sys.stderr)
            continue
        row = run_library(dist, package, snippet, args.timeout, args.keep_reports)
        rows.append(row)
        print(f"{dist}: {row.checked}/{row.targets} checked, {row.errors} errors, {row.warnings} warnings, "
              f"{row.seconds:.0f} s", file=sys.stderr, flush=True)
        for line in row.reasons + row.findings:
            print(f"    {line}", file=sys.stderr)
        for line in row.elsewhere:
            print(f"    (located in another library) {line}", file=sys.stderr)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump([r.__dict__ for r in rows], handle, indent=2)
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
