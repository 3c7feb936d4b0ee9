"""Neurorun-export: a saved policy as one ONNX or TorchScript file that maps raw
observations to the env's actions as neurorun's own policy does, one observation at a time
(normalization, the network, clipping or argmax + start), on recorded observations, extreme
and non-finite ones included; its metadata; an episode of the ONNX file alone; bad input.

Expected actions are the torch policy's (`EnvPolicy.actions`) on each observation alone, a
recurrent net's state carried per observation; the files run through onnxruntime's and
`torch.jit.load`'s own APIs (TorchScript in a Python where neurorun cannot be imported).
"""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import neurorun
from neurorun.nets import parse_network
from neurorun.nets.catalog import LAYERS
from neurorun.problems.export import EnvPolicy
from neurorun.tools import evaluate, export
from neurorun.tools.export_formats import FORMATS, ExportError, export_policy
from neurorun.tools.loading import load_policy

from .helpers import BIAS, WEIGHT, fails_with, save_checkpoint, save_policy

# the tests load TorchScript files as a user does; torch 2.13 says torch.export is newer
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated")

ONNX = pytest.param("onnx", marks=pytest.mark.extras("export"))
SUFFIX = {"onnx": ".onnx", "torchscript": ".pt"}
ROOT = Path(__file__).resolve().parents[2]


def with_extremes(obs: np.ndarray) -> np.ndarray:
    """``obs (N, n)`` and rows of 1e30, -1e30, NaN, inf, -inf, and mixes of them with 0."""
    n = obs.shape[1]
    rows = [np.full(n, value) for value in (1e30, -1e30, np.nan, np.inf, -np.inf)]
    for index, value in ((0, np.nan), (n - 1, np.inf), (0, -1e30)):
        row = np.zeros(n)
        row[index] = value
        rows.append(row)
    rows.append(np.where(np.arange(n) % 2 == 0, 1e30, -1e30))
    return np.concatenate([obs, np.array(rows)]).astype(np.float32)


def expected_steps(policy: EnvPolicy, obs: np.ndarray, steps: int = 2) -> list[np.ndarray]:
    """The torch policy's actions, each observation alone, for ``steps`` steps on the same
    observations (a recurrent net's state carried from step to step, per observation)."""
    states: list = [None] * len(obs)
    result = []
    with torch.no_grad():
        for _ in range(steps):
            actions = []
            for index, row in enumerate(torch.from_numpy(obs)):
                action, states[index] = policy.actions(row, states[index])
                actions.append(action.numpy())
            result.append(np.stack(actions))
    return result


def metadata_of(data: bytes, fmt: str) -> dict:
    """The metadata of a file's bytes, read with the format's own API."""
    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        return json.loads(session.get_modelmeta().custom_metadata_map["neurorun"])
    files = {"neurorun.json": ""}
    torch.jit.load(io.BytesIO(data), _extra_files=files)
    return json.loads(files["neurorun.json"])


def file_steps(data: bytes, fmt: str, obs: np.ndarray, steps: int = 2) -> list[np.ndarray]:
    """The file's actions for ``steps`` steps on ``obs``, from the zero state its metadata
    describes, each step's state_out fed back as the next state_in."""
    shapes = [item["shape"][1:] for item in metadata_of(data, fmt)["inputs"][1:]]
    state = [np.zeros((len(obs), *shape), np.float32) for shape in shapes]
    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        names = [item.name for item in session.get_inputs()]
        run = lambda *feeds: session.run(None, dict(zip(names, feeds, strict=True)))  # noqa: E731
    else:
        module = torch.jit.load(io.BytesIO(data))

        def run(*feeds):
            with torch.no_grad():
                out = module(*(torch.from_numpy(feed) for feed in feeds))
            return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]
    result = []
    for _ in range(steps):
        action, *state = run(obs, *state)
        result.append(action)
    return result


def assert_same_actions(got: list[np.ndarray], expected: list[np.ndarray]) -> None:
    """Discrete choices identical; Box actions float32 within 1e-5, NaN where NaN."""
    for have, want in zip(got, expected, strict=True):
        assert have.shape == want.shape
        if want.dtype.kind == "i":
            assert have.dtype == np.int64
            np.testing.assert_array_equal(have, want)
        else:
            assert have.dtype == np.float32
            np.testing.assert_allclose(have, want, rtol=0, atol=1e-5, equal_nan=True)


def state_shapes(module, inputs) -> str:
    """Test metadata: the inputs' names and shapes, as the tool's metadata lists them."""
    return json.dumps({"inputs": [{"name": name, "shape": ["batch", *t.shape[1:]]}
                                  for name, t in inputs.items()]})


# ----- every layer of the network language -----
ELEMENTWISE = {name: f"Linear(obs_length, 8) >> {name}() >> Linear(8, act_length)"
               for name in LAYERS if name not in ("Linear", "Threshold")}
LAYER_NETWORKS = {
    **ELEMENTWISE,
    "Linear": "Linear(obs_length, act_length)",
    "Threshold": "Linear(obs_length, 8) >> Threshold(0.1, 2.0) >> Linear(8, act_length)",
    "LayerNorm": "Linear(obs_length, 8) >> LayerNorm(8) >> Linear(8, act_length)",
    "PReLU": "Linear(obs_length, 8) >> PReLU() >> Linear(8, act_length)",
    # dim 0 is an observation's own axis (a layer sees one observation), not the batch's
    "Softmax": "Linear(obs_length, act_length) >> Softmax(dim=0)",
    "LogSoftmax": "Linear(obs_length, act_length) >> LogSoftmax(dim=-1)",
    "Clip": "Linear(obs_length, 8) >> Clip(-0.5, 0.5) >> Linear(8, act_length)",
    "Bin": "Linear(obs_length, 8) >> Bin(-1, 1) >> Linear(8, act_length)",
    "Slice": "Linear(obs_length, 8) >> Slice(2, -3)",
    "Round": "Linear(obs_length, 8) >> Round(1) >> Linear(8, act_length)",
    "Apply": 'Linear(obs_length, act_length) >> Apply("clamp(2 * tanh(x), -1, 1) '
             '+ sign(x) * sqrt(abs(x)) + x % 3 + exp(-square(x)) + round(x)")',
    "RNN": "RNN(obs_length, 8, nonlinearity='relu') >> Linear(8, act_length)",
    "LSTM": "Linear(obs_length, 8) >> LSTM(8, 6) >> Linear(6, act_length)",
    "GRU": "GRU(obs_length, 6) >> Tanh() >> Linear(6, act_length)",
}
# (format, layer) -> the refusal: torch.onnx has no export of a non-zero threshold, and writes
# log(sigmoid(x)), which is -inf below x = -88 or so (torch's LogSigmoid is x there)
NO_EXPORT = {("onnx", "Threshold"): ("Threshold(threshold=0.1, value=2.0)", "has no onnx export"),
             ("onnx", "LogSigmoid"): ("LogSigmoid()", "is not written exactly as onnx")}
# layers where a finite observation of 1e30 overflows float32 inside (LayerNorm's variance),
# so that torch and onnxruntime give NaN or numbers differently (docs/checkpoints.md)
OVERFLOWS = {("onnx", "LayerNorm")}


def layer_policy(network: str, discrete_start: int | None = None) -> EnvPolicy:
    """A policy of ``network`` on 5 observations and 3 actions, seeded, with statistics, and
    Box bounds of ±1.5 (or Discrete choices from ``discrete_start``)."""
    generator = torch.Generator().manual_seed(1)
    with torch.random.fork_rng():
        torch.manual_seed(2)
        net = parse_network(network, obs_length=5, act_length=3)
    bounds = {} if discrete_start is not None else {"act_low": torch.full((3,), -1.5),
                                                    "act_high": torch.full((3,), 1.5)}
    return EnvPolicy(net, obs_mean=torch.randn(5, generator=generator),
                     obs_stdev=torch.rand(5, generator=generator) + 0.5,
                     discrete_start=discrete_start, obs_shape=(5,), **bounds).eval()


def test_every_layer_of_the_language_has_a_network_here():
    assert set(LAYER_NETWORKS) == set(LAYERS)


@pytest.mark.parametrize("fmt", [ONNX, "torchscript"])
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_exports_or_is_refused_naming_it(layer, fmt):
    policy = layer_policy(LAYER_NETWORKS[layer])
    sample = torch.randn(16, 5, generator=torch.Generator().manual_seed(3)) * 2
    if (fmt, layer) in NO_EXPORT:
        shown, why = NO_EXPORT[fmt, layer]
        with pytest.raises(ExportError) as caught:
            export_policy(FORMATS[fmt], policy, sample, state_shapes)
        assert str(caught.value).startswith(f"layer 2 of the network, {shown}, {why}")
        assert str(caught.value).endswith("; use another layer or --format torchscript")
        return
    data = export_policy(FORMATS[fmt], policy, sample, state_shapes)
    # other observations than the ones it was traced on, in batches of other sizes
    obs = with_extremes(np.random.default_rng(4).normal(0, 3, (23, 5)))
    if (fmt, layer) in OVERFLOWS:
        obs = obs[np.abs(np.nan_to_num(obs, posinf=0, neginf=0)).max(1) < 1e29]
    for batch in (obs, obs[:1]):
        assert_same_actions(file_steps(data, fmt, batch), expected_steps(policy, batch))


@pytest.mark.extras("export")
def test_a_layer_written_wrongly_is_refused_where_the_file_would_differ():
    """torch.onnx writes floor division as truncation: -3 // 2 gave -1, not -2. The layer is
    checked alone on its sample inputs scaled by up to ±1000, which reach negative values
    though the sample's are positive (a ReLU before it)."""
    policy = layer_policy('Linear(obs_length, act_length) >> ReLU() >> Apply("x // 2")')
    with pytest.raises(ExportError, match=r"^layer 3 of the network, Apply\('x // 2'\), is not "
                       r"written exactly as onnx: its outputs differ from torch's \(by up to 1"):
        export_policy(FORMATS["onnx"], policy, torch.randn(16, 5), state_shapes)
    data = export_policy(FORMATS["torchscript"], policy, torch.randn(16, 5), state_shapes)
    obs = np.random.default_rng(9).normal(0, 3, (20, 5)).astype(np.float32)
    assert_same_actions(file_steps(data, "torchscript", obs), expected_steps(policy, obs))


@pytest.mark.parametrize("fmt", [ONNX, "torchscript"])
def test_discrete_choices_count_nan_as_the_largest_score_and_add_the_start(fmt):
    """argmax + start, a NaN score chosen first as torch's and numpy's argmax (so the run)
    choose it: ONNX's ArgMax passes NaN over, and chose 0 for [1, nan, 0]. An observation
    holding a NaN or an infinity chooses ``start``."""
    policy = layer_policy('Slice(0, 3) >> Apply("log(x)")', discrete_start=2)
    policy.obs_mean, policy.obs_stdev = None, None
    e = np.e
    obs = np.array([[e, -1, 1], [-1, e, -1], [1e30, -1, e**2], [e, e**2, 0], [0, 0, 0],
                    [-1, -1, -1], [e**0.5, e**3, e**-1], [1, np.nan, 1], [np.inf, 1, 1]])
    padded = np.concatenate([obs, np.ones((len(obs), 2))], axis=1).astype(np.float32)
    data = export_policy(FORMATS[fmt], policy, torch.ones(4, 5), state_shapes)
    got = file_steps(data, fmt, padded, steps=1)[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.log(obs)  # [1, nan, 0], [nan, 1, nan], [69, nan, 2], [1, 2, -inf], ...
    expected = np.argmax(scores, axis=1) + 2
    expected[-2:] = 2
    np.testing.assert_array_equal(got, expected)
    assert list(got) == [3, 2, 3, 3, 2, 2, 3, 2, 2]  # by hand


# ----- recorded observations of a gymnasium, an EnvPool and a brax env -----
NETWORKS = {"linear": "Linear(obs_length, act_length)",
            "mlp": "Linear(obs_length, 16) >> Tanh() >> Linear(16, act_length)",
            "lstm": "Linear(obs_length, 8) >> LSTM(8, 8) >> Linear(8, act_length)"}
ENVS = ["gym::CartPole-v1",
        pytest.param("envpool::Pendulum-v1", marks=pytest.mark.extras("envpool")),
        pytest.param("brax::fast", marks=pytest.mark.extras("jax"))]


@pytest.fixture(scope="module", params=ENVS)
def recorded(request, tmp_path_factory):
    """(folder, observations): each network saved on the env with statistics, and 40 of the
    env's observations (random actions, 4 envs) with extreme and non-finite rows."""
    from neurorun.envs import make_env

    env = make_env(request.param, 4)
    generator = torch.Generator().manual_seed(5)
    rows = [env.reset(seed=0)]
    for _ in range(9):
        rows.append(env.step(torch.randn(4, env.single_action_space.shape[0],
                                         generator=generator))[0])
    env.close()
    folder = tmp_path_factory.mktemp(request.param.replace("::", "_"))
    for name, network in NETWORKS.items():
        save_policy(folder / name, request.param, network, normalize=True)
    return folder, with_extremes(torch.cat(rows).numpy())


def export_all(folder: Path, fmt: str) -> dict[str, Path]:
    """Each network's run exported with the command line, in ``fmt``."""
    files = {}
    for name in NETWORKS:
        files[name] = folder / f"{name}_policy{SUFFIX[fmt]}"
        assert export.main([str(folder / name), "--out", str(files[name]), "--format", fmt]) == 0
    return files


@pytest.mark.extras("export")
def test_the_onnx_file_acts_as_the_torch_policy_on_recorded_observations(recorded, capsys):
    folder, obs = recorded
    for name, path in export_all(folder, "onnx").items():
        policy = load_policy(folder / name).policy
        assert_same_actions(file_steps(path.read_bytes(), "onnx", obs),
                            expected_steps(policy, obs))


def test_the_torchscript_file_acts_as_the_torch_policy_without_neurorun(recorded, tmp_path):
    """torch.jit.load in a Python where neurorun cannot be imported (tests/tools/
    torchscript_fresh.py checks it cannot), two steps on the recorded observations."""
    folder, obs = recorded
    files = export_all(folder, "torchscript")
    torch.save(torch.from_numpy(obs), tmp_path / "obs.pt")
    pairs = [str(part) for name, path in files.items() for part in (path, tmp_path / name)]
    result = subprocess.run(
        [sys.executable, "-I", "-S", str(ROOT / "tests" / "tools" / "torchscript_fresh.py"),
         str(Path(torch.__file__).parents[1]), str(tmp_path / "obs.pt"), *pairs],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ran without neurorun: torch"
    for name in NETWORKS:
        steps = torch.load(tmp_path / name)
        assert_same_actions([step[0].numpy() for step in steps],
                            expected_steps(load_policy(folder / name).policy, obs))


# ----- what a file holds -----
def onnx_session(path: Path):
    import onnxruntime

    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("fmt", [ONNX, "torchscript"])
def test_the_metadata_says_what_the_file_is_and_the_actions_are_computed_by_hand(
        fmt, tmp_path, capsys):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    best = run / "checkpoints" / "best"
    best.with_suffix(".json").write_text(json.dumps(
        {**json.loads(best.with_suffix(".json").read_text()), "score": 123.5}))
    out = tmp_path / f"policy{SUFFIX[fmt]}"
    assert export.main([str(run), "--out", str(out), "--format", fmt]) == 0
    assert capsys.readouterr().out == (f"wrote {out} ({fmt}): obs ('batch', 4) float32, "
                                       "action ('batch',) int64\n")
    meta = metadata_of(out.read_bytes(), fmt)
    saved = torch.load(best.with_suffix(".pt"), weights_only=True)
    count = saved["obs_count"]
    mean = saved["obs_sum"].numpy() / count
    stdev = np.sqrt(np.maximum(saved["obs_sum_of_squares"].numpy() / count - mean**2, 1e-2))
    high = [4.8, None, 24 * 2 * np.pi / 360, None]  # gymnasium's CartPole: 2 x its limits
    assert meta["neurorun_version"] == neurorun.__version__
    assert (meta["env"], meta["env_config"], meta["center_score"]) == ("CartPole-v1", {}, 123.5)
    assert meta["action_space"] == {"type": "Discrete", "n": 2, "start": 0}
    space = meta["observation_space"]
    assert (space["type"], space["shape"], space["dtype"]) == ("Box", [4], "float32")
    assert space["high"] == pytest.approx(high) and space["low"] == pytest.approx(
        [None if v is None else -v for v in high])
    assert meta["inputs"] == [{"name": "obs", "shape": ["batch", 4], "dtype": "float32"}]
    assert meta["outputs"] == [{"name": "action", "shape": ["batch"], "dtype": "int64"}]
    np.testing.assert_allclose(meta["observation_normalization"]["mean"], mean, rtol=1e-6)
    np.testing.assert_allclose(meta["observation_normalization"]["stdev"], stdev, rtol=1e-6)
    if fmt == "onnx":  # the graph's own names, shapes and types
        session = onnx_session(out)
        assert [(i.name, i.shape, i.type) for i in session.get_inputs()] == [
            ("obs", ["batch", 4], "tensor(float)")]
        assert [(o.name, o.shape, o.type) for o in session.get_outputs()] == [
            ("action", ["batch"], "tensor(int64)")]
    obs = np.random.default_rng(6).normal(0.1, 0.5, (9, 4)).astype(np.float32)
    scores = ((obs - mean) / stdev) @ WEIGHT.T + BIAS
    np.testing.assert_array_equal(file_steps(out.read_bytes(), fmt, obs, 1)[0],
                                  scores.argmax(1))


@pytest.mark.extras("export")
def test_a_recurrent_files_state_is_named_shaped_and_starts_at_zeros(tmp_path, capsys):
    run = save_policy(tmp_path / "run", "CartPole-v1", NETWORKS["lstm"], normalize=True)
    out = tmp_path / "policy.onnx"
    assert export.main([str(run), "--out", str(out)]) == 0
    meta = metadata_of(out.read_bytes(), "onnx")
    states = [{"name": f"state_in_{k}", "shape": ["batch", 8], "dtype": "float32",
               "initial": 0.0} for k in range(2)]  # the LSTM's h and c
    assert meta["inputs"][1:] == states
    assert meta["outputs"][1:] == [{**state, "name": f"state_out_{k}"}
                                   for k, state in enumerate(states)]
    session = onnx_session(out)
    assert [i.name for i in session.get_inputs()] == ["obs", "state_in_0", "state_in_1"]
    assert [o.name for o in session.get_outputs()] == ["action", "state_out_0", "state_out_1"]
    assert [o.shape for o in session.get_outputs()[1:]] == [["batch", 8]] * 2


# ----- an episode of the ONNX file alone -----
PLAY = ROOT / "examples" / "play_onnx_policy.py"


def play(policy: Path, seed: int, episodes: int) -> list[float]:
    """examples/play_onnx_policy.py's returns, in a Python where torch and neurorun cannot be
    imported (the script needs only gymnasium and onnxruntime)."""
    hide = ("import runpy, sys; sys.modules.update(torch=None, neurorun=None); "
            "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", hide, str(PLAY), str(policy), "--seed",
                             str(seed), "--episodes", str(episodes)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return [float(line.split("return ")[1].split(",")[0]) for line in result.stdout.splitlines()]


@pytest.mark.extras("export")
def test_an_episode_of_the_onnx_file_alone_scores_the_runs_center_return(tmp_path, capsys):
    """A real run (CartPole, normalized observations, 50-step episodes): the example script
    on the run's center-evaluation seeds returns best.json's score, episode by episode what
    neurorun-eval returns."""
    from neurorun.cli.app import compose_config
    from neurorun.loop.runner import run

    folder = tmp_path / "run"
    run(compose_config(["debug=default", "logger.console.quiet=true", "env=CartPole-v1",
                        "env.backend=gymnasium", "problem.observation_normalization=true"]),
        run_dir=folder)
    out = tmp_path / "policy.onnx"
    assert export.main([str(folder), "--out", str(out)]) == 0
    best = folder / "checkpoints" / "best.pt"
    episodes, seed = evaluate.center_evaluation(best)
    returns = play(out, seed, episodes)
    assert np.mean(returns) == json.loads(best.with_suffix(".json").read_text())["score"]
    expected = evaluate.evaluate(str(folder), episodes=episodes, seed=seed)["episodes"]
    assert returns == [episode["return"] for episode in expected]
    assert min(returns) > 0 and max(returns) <= 50  # the run's episode_length


@pytest.mark.extras("export")
def test_the_example_carries_a_recurrent_state_as_neurorun_eval_does(tmp_path, capsys):
    run = save_policy(tmp_path / "run", "CartPole-v1", NETWORKS["lstm"], normalize=True)
    out = tmp_path / "policy.onnx"
    assert export.main([str(run), "--out", str(out)]) == 0
    expected = evaluate.evaluate(str(run), episodes=3, seed=7)["episodes"]
    assert play(out, 7, 3) == [episode["return"] for episode in expected]


# ----- bad input: one line, exit status 2, nothing written -----
def refused(capsys, argv: list[str], *words: str) -> str:
    """The line neurorun-export refuses ``argv`` with; its --out is not there after."""
    out = Path(argv[argv.index("--out") + 1])
    existed = out.read_bytes() if out.is_file() else None
    line = fails_with(capsys, "export", argv, *words)
    assert (out.read_bytes() if out.is_file() else None) == existed
    assert not list(out.parent.glob(f".{out.name}.*")) if out.parent.is_dir() else True
    return line


def test_a_folder_without_a_policy(tmp_path, capsys):
    (tmp_path / "run").mkdir()
    refused(capsys, [str(tmp_path / "run"), "--out", str(tmp_path / "p.pt"), "--format",
                     "torchscript"], "no checkpoint in", "checkpoints/best.pt")


def test_a_pickle_needs_trust_pickle(run_dir, tmp_path, capsys):
    pickled = run_dir / "checkpoints" / "best.pkl"
    out = tmp_path / "p.pt"
    refused(capsys, [str(pickled), "--out", str(out), "--format", "torchscript"],
            "is a pickle", "--trust-pickle")
    assert export.main([str(pickled), "--out", str(out), "--format", "torchscript",
                        "--trust-pickle"]) == 0
    obs = np.random.default_rng(8).normal(0, 1, (5, 4)).astype(np.float32)
    np.testing.assert_array_equal(file_steps(out.read_bytes(), "torchscript", obs, 1)[0],
                                  (obs @ WEIGHT.T + BIAS).argmax(1))


def test_an_existing_output_needs_force(run_dir, tmp_path, capsys):
    out = tmp_path / "p.pt"
    out.write_bytes(b"the user's file")
    refused(capsys, [str(run_dir), "--out", str(out), "--format", "torchscript"],
            f"--out {str(out)!r} exists; pass --force")
    assert export.main([str(run_dir), "--out", str(out), "--format", "torchscript",
                        "--force"]) == 0
    assert metadata_of(out.read_bytes(), "torchscript")["env"] == "CartPole-v1"


def test_the_checkpoint_itself_is_not_an_output(run_dir, capsys):
    best = run_dir / "checkpoints" / "best.pt"
    refused(capsys, [str(run_dir), "--out", str(best), "--format", "torchscript", "--force"],
            "is inside a run's checkpoints/ folder")


def test_an_output_in_a_missing_folder(run_dir, tmp_path, capsys):
    out = tmp_path / "missing" / "sub" / "p.pt"
    refused(capsys, [str(run_dir), "--out", str(out), "--format", "torchscript"],
            f"the folder {str(out.parent)!r} does not exist")
    assert not (tmp_path / "missing").exists()


def test_an_upper_case_suffix_names_the_same_format(run_dir, tmp_path):
    out = tmp_path / "P.PT"
    assert export.main([str(run_dir), "--out", str(out), "--format", "torchscript"]) == 0
    assert metadata_of(out.read_bytes(), "torchscript")["env"] == "CartPole-v1"


@pytest.mark.parametrize(("fmt", "name"), [("torchscript", "p.onnx"), ("onnx", "p.pt")])
def test_an_output_named_for_the_other_format(fmt, name, run_dir, tmp_path, capsys):
    refused(capsys, [str(run_dir), "--out", str(tmp_path / name), "--format", fmt],
            f"--format {fmt} writes a")


@pytest.mark.extras("export")
def test_a_layer_without_an_export_is_named(tmp_path, capfd):
    """One line: torch's exporter prints the layer's graph to stdout from C++ (caught)."""
    run = save_policy(tmp_path / "run", "CartPole-v1", LAYER_NETWORKS["Threshold"])
    line = refused(capfd, [str(run), "--out", str(tmp_path / "p.onnx")],
                   "layer 2 of the network, Threshold(threshold=0.1, value=2.0), has no onnx "
                   "export", "--format torchscript", "nothing written")
    assert "Traceback" not in line and list(tmp_path.iterdir()) == [run]
    assert export.main([str(run), "--out", str(tmp_path / "p.pt"), "--format",
                        "torchscript"]) == 0


def test_missing_or_non_finite_statistics(tmp_path, capsys):
    run = save_checkpoint(tmp_path / "run", normalize=True)
    best = run / "checkpoints" / "best.pt"
    saved = torch.load(best, weights_only=True)
    out = ["--out", str(tmp_path / "p.pt"), "--format", "torchscript"]
    torch.save({**saved, "obs_sum": saved["obs_sum"] * np.nan}, best)
    refused(capsys, [str(run), *out], ": obs_sum is ", "expected")
    torch.save({"solution": saved["solution"]}, best)  # its .json says normalization
    refused(capsys, [str(run), *out], "holds no observation statistics")


def test_a_policy_whose_outputs_are_not_finite(tmp_path, capsys):
    run = save_policy(tmp_path / "run", "CartPole-v1",
                      'Linear(obs_length, act_length) >> Apply("log(x)")')
    refused(capsys, [str(run), "--out", str(tmp_path / "p.pt"), "--format", "torchscript"],
            "the policy's outputs are not finite on", "of 16 sample observations",
            "nothing written")


@pytest.mark.parametrize(("change", "expected"), [
    (lambda policy: setattr(policy, "obs_mean", None), "observation statistics are missing"),
    (lambda policy: policy.obs_stdev.fill_(np.inf), "obs_stdev holds non-finite values")])
def test_a_pickles_policy_is_held_to_its_own_statistics(change, expected, tmp_path, capsys):
    """A pickle's policy module carries statistics of its own beside the dict's, which the
    loader checks: the exported file would use the module's."""
    run = save_checkpoint(tmp_path / "run", normalize=True)
    pickled = run / "checkpoints" / "best.pkl"
    saved = pickle.loads(pickled.read_bytes())
    change(saved["policy"])
    pickled.write_bytes(pickle.dumps(saved))
    refused(capsys, [str(pickled), "--trust-pickle", "--out", str(tmp_path / "p.pt"),
                     "--format", "torchscript"], expected)


@pytest.mark.parametrize("name", ["last.pt", "state.pt", "mine.pt"])
def test_no_output_inside_a_runs_checkpoints_folder(run_dir, capsys, name):
    """The run's own files live there (`last.pt` was overwritten with --force)."""
    out = run_dir / "checkpoints" / name
    before = sorted(p.name for p in out.parent.iterdir())
    refused(capsys, [str(run_dir), "--out", str(out), "--format", "torchscript", "--force"],
            "is inside a run's checkpoints/ folder", "pass a --out outside it")
    assert sorted(p.name for p in out.parent.iterdir()) == before


@pytest.mark.parametrize("tool", ["eval", "render", "export"])
def test_an_exported_torchscript_policy_given_to_a_tool_says_what_it_is(run_dir, tmp_path,
                                                                        capsys, tool):
    exported = tmp_path / "policy.pt"
    assert export.main([str(run_dir), "--out", str(exported), "--format", "torchscript"]) == 0
    capsys.readouterr()
    flags = {"export": ["--format", "torchscript", "--out", str(tmp_path / "again.pt")],
             "render": ["--out", str(tmp_path / "frames.gif")], "eval": []}[tool]
    line = fails_with(capsys, tool, [str(exported), *flags],
                      "is an exported TorchScript policy", "torch.jit.load")
    assert "weights_only" not in line


def test_a_policy_file_outside_a_run_is_not_its_own_output(run_dir, tmp_path, capsys):
    import shutil

    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("best.pt", "best.json"):
        shutil.copy(run_dir / "checkpoints" / name, mine / name)
    refused(capsys, [str(mine / "best.pt"), "--out", str(mine / "best.pt"), "--format",
                     "torchscript", "--force"], "is the checkpoint being exported")


def test_an_empty_out_names_no_file(run_dir, capsys):
    fails_with(capsys, "export", [str(run_dir), "--out", "", "--format", "torchscript"],
               "--out '' names no file; pass --out policy.pt")
