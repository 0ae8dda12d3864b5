"""meshc.Session: runs on several device counts, against meshrun, and
checkpoints."""

import numpy as np
import pytest

import meshc
from conftest import DIGITS, MLP, run_tool

LAYOUTS = [("", ""), ("b:2", "batch:b"), ("b:2;m:2", "batch:b;hidden:m"),
           ("b:2;m:4", "batch:b;hidden:m")]


def compile_mlp(mesh, layout):
    if not mesh:
        return meshc.compile(MLP)
    return meshc.compile(MLP, mesh=mesh, layout=layout)


def test_params_equal_meshruns_bit_for_bit(tmp, digits):
    program = compile_mlp("b:2;m:2", "batch:b;hidden:m")
    path = tmp / "mlp.mprog"
    program.save(path)
    dumped = tmp / "params"
    tool = run_tool("meshrun", str(path), "--steps", "20", "--quiet",
                    "--input", f"x={DIGITS / 'train_x.npy'}",
                    "--input", f"labels={DIGITS / 'train_labels.npy'}",
                    "--dump-params", str(dumped))
    assert tool.returncode == 0, tool.stderr
    session = meshc.Session(program)
    history = session.train(digits["train"], steps=20)
    assert len(history) == 20 and session.step == 20
    params = session.params
    for name, value in params.items():
        expected = np.load(dumped / (name.replace("/", "__") + ".npy"))
        np.testing.assert_array_equal(value, expected, err_msg=name)


@pytest.mark.parametrize("mesh,layout", LAYOUTS[1:])
def test_every_device_count_trains_like_one_device(digits, mesh, layout):
    reference = meshc.Session(compile_mlp("", ""))
    expected_history = reference.train(digits["train"], steps=5)
    session = meshc.Session(compile_mlp(mesh, layout))
    assert reference.devices == 1
    assert session.devices == np.prod(
        [int(axis.split(":")[1]) for axis in mesh.split(";")])
    history = session.train(digits["train"], steps=5)
    for got, want in zip(history, expected_history):
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-5)
    expected = reference.params
    for name, value in session.params.items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_run_returns_outputs_and_trains_nothing(digits):
    session = meshc.Session(compile_mlp("b:2", "batch:b"))
    before = session.params
    batch = {k: v[:64] for k, v in digits["train"].items()}
    outputs = session.run(batch)
    assert set(outputs) == {"loss", "accuracy"}
    assert outputs["loss"].shape == () and outputs["loss"].dtype == np.float32
    assert 2.0 < float(outputs["loss"]) < 2.6  # ~log(10) untrained
    assert session.step == 0
    for name, value in session.params.items():
        np.testing.assert_array_equal(value, before[name])


def test_evaluate_averages_the_full_batches(digits):
    session = meshc.Session(compile_mlp("b:2", "batch:b"))
    session.train(digits["train"], steps=30)
    report = session.evaluate(digits["test"])
    by_hand = []
    for b in range(len(digits["test"]["x"]) // 64):
        rows = slice(64 * b, 64 * b + 64)
        by_hand.append(float(session.run(
            {k: v[rows] for k, v in digits["test"].items()})["accuracy"]))
    assert report["accuracy"] == pytest.approx(np.mean(by_hand), rel=1e-6)
    assert report["accuracy"] > 0.5


def test_checkpoints_continue_exactly(tmp, digits):
    program = compile_mlp("b:2;m:2", "batch:b;hidden:m")
    first = meshc.Session(program)
    first.train(digits["train"], steps=5)
    folder = first.save(tmp / "ckpt")
    assert folder.endswith("step-5")
    first.train(digits["train"], steps=5)

    # Restored on another mesh and layout: the same run goes on.
    second = meshc.Session(compile_mlp("b:2", "batch:b"))
    assert second.restore(tmp / "ckpt").endswith("step-5")
    assert second.step == 5
    second.train(digits["train"], steps=5)
    expected = first.params
    for name, value in second.params.items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_progress_is_called_after_every_step(digits):
    session = meshc.Session(compile_mlp("b:2", "batch:b"))
    seen = []
    session.train(digits["train"], steps=3,
                  progress=lambda step, outputs: seen.append(
                      (step, sorted(outputs))))
    assert seen == [(1, ["accuracy", "loss"]), (2, ["accuracy", "loss"]),
                    (3, ["accuracy", "loss"])]


def test_float64_and_int64_arrays_are_narrowed(digits):
    session = meshc.Session(compile_mlp("b:2", "batch:b"))
    wide = {"x": digits["train"]["x"].astype(np.float64),
            "labels": digits["train"]["labels"].astype(np.int64)}
    narrow = meshc.Session(compile_mlp("b:2", "batch:b"))
    assert session.train(wide, steps=2) == narrow.train(digits["train"],
                                                         steps=2)


def test_input_arrays_are_read_in_place(digits):
    """No copy of the caller's arrays: a dataset changed between two runs
    of one train() call is read changed (what docs/python.md says)."""
    program = compile_mlp("b:2", "batch:b")
    x = digits["train"]["x"].copy()
    labels = digits["train"]["labels"].copy()

    def zero_after_first(step, outputs):
        if step == 1:
            x[:] = 0.0
    in_place = meshc.Session(program)
    in_place.train({"x": x, "labels": labels}, steps=2,
                   progress=zero_after_first)

    expected = meshc.Session(program)
    expected.train(digits["train"], steps=1)
    expected.train({"x": np.zeros_like(x), "labels": labels}, steps=1)
    for name, value in in_place.params.items():
        np.testing.assert_array_equal(value, expected.params[name],
                                      err_msg=name)


def test_the_session_lets_go_of_the_arrays(digits):
    import sys
    x = digits["train"]["x"].copy()
    before = sys.getrefcount(x)
    session = meshc.Session(compile_mlp("b:2", "batch:b"))
    session.train({"x": x, "labels": digits["train"]["labels"]}, steps=1)
    assert sys.getrefcount(x) > before  # held while bound
    del session
    assert sys.getrefcount(x) == before
