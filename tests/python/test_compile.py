"""meshc.compile: the options, the program and its explanation, against the
meshc tool's output for the same flags."""

import json

import pytest

import meshc
from conftest import DIGITS, MLP, ROOT, run_tool


def test_program_equals_the_tools(tmp):
    program = meshc.compile(MLP, mesh="b:2;m:4", layout="batch:b;hidden:m")
    out = tmp / "mlp.mprog"
    tool = run_tool("meshc", str(MLP), "--mesh", "b:2;m:4", "--layout",
                    "batch:b;hidden:m", "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(program.json) == json.loads(out.read_text())
    assert program.mesh == "b:2;m:4"
    assert program.devices == 8
    assert program.inputs == {"x": ("f32", (64, 64)),
                              "labels": ("i32", (64,))}
    assert set(program.outputs) == {"loss", "accuracy"}


@pytest.mark.parametrize("flags,options", [
    (["--precision=bf16"], {"precision": "bf16"}),
    (["--shard-optimizer"], {"shard_optimizer": True}),
    (["--shard-params"], {"shard_params": True}),
    (["--no-fuse", "--seed", "7"], {"fuse": False, "seed": 7}),
    (["--bucket-size", "0", "--overlap-limit", "0"],
     {"bucket_size": "0", "overlap_limit": "0"}),
])
def test_options_are_the_flags(tmp, flags, options):
    program = meshc.compile(MLP, mesh="b:2", layout="batch:b", **options)
    out = tmp / "p.mprog"
    tool = run_tool("meshc", str(MLP), "--mesh", "b:2", "--layout", "batch:b",
                    *flags, "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(program.json) == json.loads(out.read_text())


@pytest.mark.parametrize("flag,option,extra", [
    # charlm in Megatron's layout: its loop bodies are ordered for overlap
    # unless schedule=False (--no-schedule), which keeps another program.
    ("--no-schedule", {"schedule": False}, []),
    # Under --shard-params each loop gathers its next layer beside an
    # iteration unless prefetch=False (--no-prefetch).
    ("--no-prefetch", {"prefetch": False}, ["--shard-params"]),
    # Its loop bodies run as two halves of the batch with
    # interleave_halves=True (--interleave-halves).
    ("--interleave-halves", {"interleave_halves": True}, []),
    # interleave_halves="forward": the backward's halves all-reduced at once.
    ("--interleave-halves=forward", {"interleave_halves": "forward"}, []),
    # Under --shard-params keep_gathered=True (--keep-gathered) stacks the
    # forward's gathered layers for the backward.
    ("--keep-gathered", {"keep_gathered": True}, ["--shard-params"]),
])
def test_loop_options_are_the_flags(tmp, flag, option, extra):
    charlm = ROOT / "examples" / "transformer" / "charlm.mtf"
    layout = "batch:b;heads:m;d_ff:m"
    shard = {"shard_params": True} if extra else {}
    kept = meshc.compile(charlm, mesh="b:2;m:2", layout=layout, **shard,
                         **option)
    ordered = meshc.compile(charlm, mesh="b:2;m:2", layout=layout, **shard)
    out = tmp / "c.mprog"
    tool = run_tool("meshc", str(charlm), "--mesh", "b:2;m:2", "--layout",
                    layout, *extra, flag, "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(kept.json) == json.loads(out.read_text())
    assert json.loads(kept.json)["steps"] != json.loads(ordered.json)["steps"]


def test_keep_gathered_implies_shard_params():
    charlm = ROOT / "examples" / "transformer" / "charlm.mtf"
    layout = "batch:b;heads:m;d_ff:m"
    alone = meshc.compile(charlm, mesh="b:2;m:2", layout=layout,
                          keep_gathered=True)
    both = meshc.compile(charlm, mesh="b:2;m:2", layout=layout,
                         keep_gathered=True, shard_params=True)
    assert json.loads(alone.json) == json.loads(both.json)


def test_microbatches_and_remat_options(tmp):
    charlm = ROOT / "examples" / "transformer" / "charlm.mtf"
    program = meshc.compile(charlm, mesh="b:2", layout="batch:b",
                            microbatches=2, remat="repeat")
    out = tmp / "c.mprog"
    tool = run_tool("meshc", str(charlm), "--mesh", "b:2", "--layout",
                    "batch:b", "--microbatches", "2", "--remat=repeat",
                    "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(program.json) == json.loads(out.read_text())
    assert json.loads(program.json)["training"]["microbatches"]["count"] == 2


def test_source_text_compiles_like_the_file():
    from_text = meshc.compile(MLP.read_text(), mesh="b:2", layout="batch:b")
    from_file = meshc.compile(MLP, mesh="b:2", layout="batch:b")
    assert json.loads(from_text.json)["steps"] == \
        json.loads(from_file.json)["steps"]
    assert from_text.name == "<source>"


def test_explain_is_the_tools_json():
    program = meshc.compile(MLP, mesh="b:2;m:4", layout="batch:b;hidden:m")
    report = program.explain()
    tool = run_tool("meshc", str(MLP), "--mesh", "b:2;m:4", "--layout",
                    "batch:b;hidden:m", "--explain=json")
    assert tool.returncode == 0, tool.stderr
    assert report == json.loads(tool.stdout)
    for key in ("tensors", "collectives", "memory", "prediction"):
        assert key in report
    # The layout communicates: hidden's split needs collectives, each with
    # its bytes and the model line that caused it.
    assert report["collectives"]
    assert all(c["received_bytes"] > 0 and c["source"].startswith("mlp.mtf:")
               for c in report["collectives"])
    w1 = [t for t in report["tensors"] if t["name"] == "w1"]
    assert w1 and "m" in w1[0]["layout"]


def test_layout_auto_reports_its_search():
    program = meshc.compile(MLP, mesh="b:2;m:2", layout="auto")
    assert "chosen layout" in program.search_report
    assert program.devices == 4


def test_save_and_load_round_trip(tmp, digits):
    program = meshc.compile(MLP, mesh="b:2", layout="batch:b")
    path = tmp / "mlp.mprog"
    program.save(path)
    loaded = meshc.Program.load(path)
    assert loaded.json == program.json
    assert loaded.name == str(path)
    with pytest.raises(ValueError, match="carries no explanation"):
        loaded.explain()
    # meshrun runs what the package saved.
    tool = run_tool("meshrun", str(path), "--steps", "1", "--input",
                    f"x={DIGITS / 'train_x.npy'}", "--input",
                    f"labels={DIGITS / 'train_labels.npy'}")
    assert tool.returncode == 0, tool.stderr


def test_pipeline_schedule_is_the_flag(tmp):
    # pipeline_schedule="1f1b" (--schedule 1f1b): the pipeline's backward
    # beside its forward, another program than GPipe's.
    model = ROOT / "tests" / "training" / "Inputs" / "pipeline-lm.mtf"
    options = {"mesh": "p:2", "layout": "layers:p", "microbatches": 2}
    one = meshc.compile(model, pipeline_schedule="1f1b", **options)
    gpipe = meshc.compile(model, **options)
    out = tmp / "s.mprog"
    tool = run_tool("meshc", str(model), "--mesh", "p:2", "--layout",
                    "layers:p", "--microbatches", "2", "--schedule", "1f1b",
                    "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(one.json) == json.loads(out.read_text())
    assert json.loads(one.json) != json.loads(gpipe.json)
    assert [p["schedule"] for p in one.explain()["pipelines"]] == ["1f1b"]


def test_virtual_stages_is_the_flag(tmp):
    # pipeline_schedule="interleaved", virtual_stages=3 (--schedule
    # interleaved --virtual-stages 3): stage s holds the blocks s, s + 2,
    # s + 4; the params keep the model's dims outside the program.
    model = ROOT / "tests" / "training" / "Inputs" / "pipeline-lm.mtf"
    options = {"mesh": "p:2", "layout": "layers:p", "microbatches": 2}
    program = meshc.compile(model, pipeline_schedule="interleaved",
                            virtual_stages=3, **options)
    out = tmp / "i.mprog"
    tool = run_tool("meshc", str(model), "--mesh", "p:2", "--layout",
                    "layers:p", "--microbatches", "2", "--schedule",
                    "interleaved", "--virtual-stages", "3", "-o", str(out))
    assert tool.returncode == 0, tool.stderr
    assert json.loads(program.json) == json.loads(out.read_text())
    [pipeline] = program.explain()["pipelines"]
    assert (pipeline["schedule"], pipeline["virtual_stages"]) == ("interleaved", 3)
    with pytest.raises(meshc.CompileError, match="needs --schedule interleaved"):
        meshc.compile(model, virtual_stages=3, **options)
