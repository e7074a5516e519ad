"""uopc as an xDSL plugin: after `pip install -e .` the stock `xdsl-opt` finds the uop
dialect, uopc's passes and pipelines, the c target and the .uir frontend through the
`xdsl.universe` entry point, and uopc-opt keeps working next to it."""

from __future__ import annotations

import subprocess
import sysconfig
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from xdsl.universe import Universe

from uopc.pipelines import FRONTENDS, PASSES, PIPELINES, TARGETS, UNIVERSE

PROGRAM = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = uop.const dense<2.0> : tensor<4xf32>
  %d = uop.const dense<3.0> : tensor<4xf32>
  %e = uop.mul %c, %d : tensor<4xf32>
  %r = uop.add %a, %e : tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""


@pytest.fixture(scope="module", autouse=True)
def installed():
    names = [ep.value for ep in entry_points(group="xdsl.universe") if ep.name == "uopc"]
    assert names == ["uopc.pipelines:UNIVERSE"], (
        "the xdsl.universe entry point of uopc is not installed: run pip install -e .")


def _tool(name: str, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sysconfig.get_path("scripts")) / name
    return subprocess.run([str(exe), *args], capture_output=True, text=True)


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def test_the_universe_holds_every_registry_entry():
    assert set(UNIVERSE.all_dialects) == {"uop"}
    assert set(UNIVERSE.all_passes) == set(PASSES) | set(PIPELINES)
    assert set(UNIVERSE.all_targets) == set(TARGETS)
    assert set(UNIVERSE.all_frontends) == set(FRONTENDS)


def test_the_multiverse_defines_each_uopc_name_once():
    multiverse = Universe.get_multiverse()  # raises on a name defined twice
    assert "uop" in multiverse.all_dialects and "c" in multiverse.all_targets
    assert set(PASSES) | set(PIPELINES) <= set(multiverse.all_passes)


def test_stock_xdsl_opt_parses_uop_and_runs_uop_fold(program):
    proc = _tool("xdsl-opt", str(program), "-p", "uop-fold")
    assert proc.returncode == 0, proc.stderr
    assert "uop.const dense<6.000000e+00> : tensor<4xf32>" in proc.stdout
    assert "uop.mul" not in proc.stdout


def test_stock_xdsl_opt_prints_c_as_uopc_opt_does(program):
    for spec in ("uop-rangeify", "uop-to-c"):
        stock = _tool("xdsl-opt", str(program), "-p", spec, "-t", "c")
        ours = _tool("uopc-opt", str(program), "-p", spec, "-t", "c")
        assert stock.returncode == ours.returncode == 0, stock.stderr + ours.stderr
        assert "void main_fn(" in stock.stdout and stock.stdout == ours.stdout


def test_stock_xdsl_opt_reads_uir(tmp_path):
    path = tmp_path / "prog.uir"
    path.write_text("%x = buffer 4 : dtype=f32 slot=0\n%y = mul %x, 2\n")
    proc = _tool("xdsl-opt", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "uop.mul" in proc.stdout
