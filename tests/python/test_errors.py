"""Every error class of the package: a Python exception carrying the
message (and place, hint) the tools print, never a crash."""

import numpy as np
import pytest

import meshc
from conftest import MLP, run_tool


def test_a_model_error_names_file_line_and_column(tmp):
    bad = tmp / "bad.mtf"
    bad.write_text("dim batch = 4\ninput x: f32[batch, d]\noutput x\n")
    with pytest.raises(meshc.CompileError) as caught:
        meshc.compile(bad)
    error = caught.value
    assert error.file == str(bad)
    assert (error.line, error.column) == (2, 21)
    assert "unknown dimension 'd'" in error.message
    # The same text as the meshc tool prints.
    tool = run_tool("meshc", str(bad))
    assert tool.returncode == 1
    assert error.text == tool.stderr


def test_a_syntax_error_in_source_text():
    with pytest.raises(meshc.CompileError) as caught:
        meshc.compile("input x: f32[batch=4]\noutput x\n")
    assert caught.value.file == "<source>"
    assert caught.value.line == 1 and caught.value.column == 19
    assert "expected ']'" in caught.value.message


def test_a_bad_layout_carries_the_hint():
    with pytest.raises(meshc.CompileError) as caught:
        meshc.compile(MLP, mesh="b:2", layout="batch:c")
    error = caught.value
    assert error.file is None and error.line is None
    assert error.message.startswith("--layout: dimension 'batch' is split "
                                    "over mesh axis 'c'")
    assert error.hint == ("add 'c' to the mesh or split 'batch' over one of "
                          "its axes")
    tool = run_tool("meshc", str(MLP), "--mesh", "b:2", "--layout", "batch:c")
    assert error.text == tool.stderr


@pytest.mark.parametrize("options,message", [
    ({"mesh": "b:2;b:4", "layout": "batch:b"}, "--mesh: mesh axis 'b'"),
    ({"mesh": "b:0", "layout": "batch:b"}, "--mesh"),
    ({"mesh": "b:3", "layout": "batch:b"}, "64"),
    ({"layout": "auto"}, "--layout auto needs a mesh"),
    ({"microbatches": 0}, "--microbatches must be at least 1"),
    ({"mesh": "b:2", "layout": "batch:b", "bucket_size": "lots"},
     "--bucket-size"),
    ({"mesh": "b:2", "layout": "batch:b", "machine": "no-such-machine"},
     "--machine"),
])
def test_bad_mesh_layout_and_options(options, message):
    with pytest.raises(meshc.CompileError, match=message.replace("(", r"\(")):
        meshc.compile(MLP, **options)


def test_a_missing_file():
    with pytest.raises(meshc.CompileError, match="no-such-model.mtf"):
        meshc.compile("no-such-model.mtf")


@pytest.mark.parametrize("options,kind,message", [
    ({"precision": "f16"}, ValueError, "precision must be one of"),
    ({"remat": "always"}, ValueError, "remat must be one of"),
    ({"repeat": "twice"}, ValueError, "repeat must be one of"),
    ({"interleave_halves": "backward"}, ValueError,
     "interleave_halves must be one of 'off', 'all', 'forward'"),
    ({"interleave_halves": 1}, TypeError, "interleave_halves must be bool or str"),
    ({"pipeline_schedule": "zb"}, ValueError,
     "pipeline_schedule must be one of 'gpipe', '1f1b', 'interleaved'"),
    ({"virtual_stages": "3"}, TypeError, "virtual_stages must be int"),
    ({"keep_gathered": "yes"}, TypeError, "keep_gathered must be bool"),
    ({"microbatches": "2"}, TypeError, "microbatches must be int"),
    ({"shard_optimizer": 1}, TypeError, "shard_optimizer must be bool"),
    ({"seed": -1}, ValueError, "seed must be at least 0"),
])
def test_option_values_are_checked(options, kind, message):
    with pytest.raises(kind, match=message):
        meshc.compile(MLP, **options)


def test_unknown_keyword_and_model_type():
    with pytest.raises(TypeError):
        meshc.compile(MLP, mesh_shape="b:2")
    with pytest.raises(TypeError, match="model must be a path"):
        meshc.compile(42)


@pytest.fixture(scope="module")
def session():
    return meshc.Session(meshc.compile(MLP, mesh="b:2", layout="batch:b"))


@pytest.mark.parametrize("inputs,message", [
    ({"x": np.zeros((64, 63), np.float32),
      "labels": np.zeros(64, np.int32)},
     r"input array 'x': shape \(64, 63\) does not match input 'x' shape "
     r"\(64, 64\)"),
    ({"x": np.zeros((64, 64), np.float32),
      "labels": np.zeros(64, np.float32)},
     "input 'labels' is i32 but the array's dtype is float32"),
    ({"x": np.zeros((64, 64), np.int32), "labels": np.zeros(64, np.int32)},
     "input 'x' is f32 but the array's dtype is int32"),
    ({"x": np.zeros((64, 64), np.float32),
      "labels": np.full(64, 2**40, np.int64)},
     "input 'labels' is i32, and its int64 values do not all fit it"),
    ({"x": np.zeros((64, 64), np.float32), "labels": np.zeros(64, np.int32),
      "pixels": np.zeros(3)},
     "has no input 'pixels'"),
    ({"x": np.zeros((70, 64), np.float32), "labels": np.zeros(65, np.int32)},
     "input array 'labels' has 65 examples but input array 'x' has 70"),
])
def test_bad_inputs(session, inputs, message):
    with pytest.raises(meshc.RunError, match=message):
        session.train(inputs, steps=1)
    # The session stays usable with good inputs.
    good = {"x": np.zeros((64, 64), np.float32),
            "labels": np.zeros(64, np.int32)}
    assert len(session.train(good, steps=1)) == 1


def test_the_extension_refuses_a_dtype_it_cannot_read(session):
    # meshc.Session narrows float64/int64 before the extension sees them;
    # the extension itself still names any other dtype, never reads it.
    with pytest.raises(meshc.RunError,
                       match="input array 'x': dtype is neither float32 "
                             "nor int32"):
        session._session.bind({"x": np.zeros((64, 64), np.float64),
                               "labels": np.zeros(64, np.int32)}, {}, False)
    good = {"x": np.zeros((64, 64), np.float32),
            "labels": np.zeros(64, np.int32)}
    assert len(session.train(good, steps=1)) == 1


def test_a_failed_run_stops_the_session():
    session = meshc.Session(meshc.compile(MLP, mesh="b:2", layout="batch:b"))
    bad = {"x": np.zeros((64, 64), np.float32),
           "labels": np.full(64, 12, np.int32)}
    with pytest.raises(meshc.RunError,
                       match=r"on device [01]: label 12 \(labels element 0\) "
                             r"is outside \[0, 10\)"):
        session.train(bad, steps=1)
    good = {"x": np.zeros((64, 64), np.float32),
            "labels": np.zeros(64, np.int32)}
    with pytest.raises(meshc.RunError, match="cannot run again"):
        session.train(good, steps=1)


def test_run_takes_one_batch(session):
    with pytest.raises(meshc.RunError, match="run\\(\\) takes one batch"):
        session.run({"x": np.zeros((128, 64), np.float32),
                     "labels": np.zeros(128, np.int32)})


def test_devices_backend_and_checkpoints_are_checked(tmp):
    program = meshc.compile(MLP, mesh="b:2", layout="batch:b")
    with pytest.raises(meshc.RunError, match="compiled for 2 devices"):
        meshc.Session(program, devices=4)
    with pytest.raises(meshc.RunError, match="backend"):
        meshc.Session(program, backend="tpu")
    with pytest.raises(ValueError, match="overlap must be"):
        meshc.Session(program, overlap="sometimes")
    with pytest.raises(TypeError, match="meshc.Program"):
        meshc.Session("mlp.mprog")
    session = meshc.Session(program)
    with pytest.raises(meshc.RunError, match="no-such-checkpoint"):
        session.restore(tmp / "no-such-checkpoint")
    with pytest.raises(ValueError, match="steps must be"):
        session.train(steps=-1)
    with pytest.raises(ValueError,
                       match=r"keep must be an int >= 1, got 0"):
        session.save(tmp / "ckpt", keep=0)


def test_a_bad_mprog_is_refused(tmp):
    bad = tmp / "bad.mprog"
    bad.write_text('{"format": "meshc-program", "version": 999}')
    with pytest.raises(meshc.RunError, match="bad.mprog"):
        meshc.Session(meshc.Program.load(bad))
    bad.write_text("not json")
    with pytest.raises(ValueError, match=r"bad.mprog: not a .mprog \(JSON\)"):
        meshc.Program.load(bad)
