"""The CPU facts schedules are sized by (`uopc.cpu`): parsing /proc/cpuinfo and sysfs's
cache folder, the UOPC_CPU knob and the pass option that pin a machine, and the register
tiles the rules derive from them."""

from __future__ import annotations

import pytest

from uopc import cpu, settings
from uopc.passes.schedule import LONG_REDUCE, WIDE_LONG_REDUCE, long_reduce, register_tile

CPUINFO_AVX512 = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) CPU @ 2.80GHz
cpu MHz\t\t: 2800.212
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512bw avx512vl avx512_bf16 amx_tile

processor\t: 1
model name\t: Intel(R) Xeon(R) CPU @ 2.80GHz
cpu MHz\t\t: 1200.000
flags\t\t: fpu sse sse2
"""


def write_caches(root, entries):
    for k, (level, kind, size) in enumerate(entries):
        index = root / f"index{k}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")


def test_cpuinfo_gives_the_first_processors_model_flags_and_clock():
    model, flags, mhz = cpu.parse_cpuinfo(CPUINFO_AVX512)
    assert model == "Intel(R) Xeon(R) CPU @ 2.80GHz" and mhz == 2800.212
    assert {"avx512f", "fma", "amx_tile"} <= flags and len(flags) == 11


@pytest.mark.parametrize("flags, vector, registers, fma", [
    ({"avx2", "fma", "avx512f"}, 64, 32, True),
    ({"avx", "avx2", "fma"}, 32, 16, True),
    ({"avx", "avx2"}, 32, 16, False),
    ({"sse2"}, 16, 16, False),
])
def test_vector_width_registers_and_fma_come_from_the_flags(flags, vector, registers, fma):
    assert cpu.from_flags(flags) == {"vector": vector, "registers": registers, "fma": fma}


def test_detect_reads_cpuinfo_and_the_data_caches_of_sysfs(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(CPUINFO_AVX512)
    caches = tmp_path / "cache"
    write_caches(caches, [(1, "Data", "48K"), (1, "Instruction", "32K"),
                          (2, "Unified", "2048K"), (3, "Unified", "107520K")])
    found = cpu.detect(info, caches)
    assert (found.vector, found.registers, found.fma) == (64, 32, True)
    assert (found.l1, found.l2, found.l3) == (48 << 10, 2 << 20, 105 << 20)
    assert found.model.startswith("Intel") and found.cores >= 1
    # nothing readable: the defaults (an AVX2 machine's sizes), no crash
    missing = cpu.detect(tmp_path / "absent", tmp_path / "absent")
    assert (missing.vector, missing.l2) == (cpu.Cpu().vector, cpu.Cpu().l2)


def test_sizes_parse_as_sysfs_and_the_knob_spell_them():
    assert [cpu.parse_size(t) for t in ("32K", "512K", "32768K", "1M", "4096", "2mb")] == [
        32 << 10, 512 << 10, 32 << 20, 1 << 20, 4096, 2 << 20]
    with pytest.raises(ValueError, match="expected a size in bytes"):
        cpu.parse_size("lots")


def test_the_knob_pins_a_preset_and_changes_fields():
    base = cpu.PRESETS["avx2"]
    assert cpu.parse_spec("avx512", base).vector == 64
    wide = cpu.parse_spec("avx2,l2=1M,cores=4", base)
    assert (wide.vector, wide.l2, wide.cores) == (32, 1 << 20, 4)
    plain = cpu.parse_spec("vector=16,fma=0", base)
    assert (plain.vector, plain.fma, plain.l1) == (16, False, base.l1)
    assert "as vector=16" in plain.model and plain.key != base.key
    with settings.override(UOPC_CPU="avx512,registers=16"):
        assert (cpu.host().vector, cpu.host().registers) == (64, 16)
    assert cpu.host("avx2").key == cpu.parse_spec("avx2", cpu.detected()).key


@pytest.mark.parametrize("spec, message", [
    ("avx1024", "unknown CPU preset 'avx1024'"),
    ("vector=10", "multiple of 4 bytes"),
    ("fma=yes", "fma is 0 or 1"),
    ("colour=red", "unknown field 'colour'"),
    ("l2=big", "expected a size in bytes"),
])
def test_a_bad_description_names_the_part_and_what_it_takes(spec, message):
    with pytest.raises(ValueError, match=message):
        cpu.parse_spec(spec, cpu.PRESETS["avx2"])


def test_a_bad_pass_option_is_refused_when_the_pass_is_built():
    from uopc.passes.options import PassOptionError
    from uopc.passes.schedule import SchedulePass

    with pytest.raises(PassOptionError, match='option cpu="zen9" is not allowed: expected '
                                              'a CPU description'):
        SchedulePass(cpu="zen9")


@pytest.mark.parametrize("spec, reduce, f32, f64", [
    # 12 ymm accumulators and 3 broadcasts of A in AVX2's 16 registers
    ("avx2", 0, (3, 32), (3, 16)),
    # 24 zmm accumulators in AVX-512's 32 (3 rows: fewer broadcasts live than 6x64)
    ("avx512", 0, (3, 128), (3, 64)),
    # AVX-512's width with 16 registers: the AVX2 tile's shape in wider vectors
    ("avx512,registers=16", 0, (3, 64), (3, 32)),
    ("vector=16", 0, (3, 16), (3, 8)),
    # a long reduction: 12 ymm accumulators, B's 2 vectors and one broadcast (6 + 2
    # loads per 12 multiply-adds)
    ("avx2", LONG_REDUCE, (6, 16), (6, 8)),
    # 24 zmm accumulators, 4 vectors of B, one broadcast (10 loads per 24), from a
    # shorter reduction on with 32 registers
    ("avx512", WIDE_LONG_REDUCE, (6, 64), (6, 32)),
    ("avx512,registers=16", LONG_REDUCE, (6, 32), (6, 16)),
    ("vector=16", LONG_REDUCE, (6, 8), (6, 4)),
])
def test_the_register_tile_fits_the_vector_registers(spec, reduce, f32, f64):
    machine = cpu.parse_spec(spec, cpu.PRESETS["avx2"])
    for element, want in ((4, f32), (8, f64)):
        rows, columns = register_tile(machine, element, reduce)
        assert (rows, columns) == want
        vectors = columns // machine.lanes(element)
        # beside the accumulators: B's vectors (a long reduction) or every row's
        # broadcast, and one more register
        assert rows * vectors + (vectors if reduce else rows) + 1 <= machine.registers
    if reduce:
        assert reduce == long_reduce(machine)
        assert register_tile(machine, 4, reduce - 1) != f32


def test_the_plan_store_and_tuning_cache_keys_depend_on_the_cpu():
    """A plan scheduled, or a schedule measured, for one CPU is not reused for another."""
    from uopc.runtime import plan_store
    from uopc.runtime.c_backend import CBackend
    from uopc.runtime.tuning import machine_identity

    keys, identities = set(), set()
    for spec in ("avx2", "avx512", "avx2,l2=1M"):
        with settings.override(UOPC_CPU=spec):
            keys.add(plan_store.plan_key(("graph", 1), "pipeline", CBackend()))
            identities.add(machine_identity())
    assert len(keys) == len(identities) == 3
