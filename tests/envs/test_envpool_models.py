"""EnvPool pools on models without textures and materials simulate what EnvPool's own do."""

from pathlib import Path
from xml.etree import ElementTree

import envpool
import numpy as np
import pytest

from neurorun.envs import envpool_models
from neurorun.envs.envpool_models import ASSETS, lean_model_options

pytestmark = pytest.mark.extras("envpool")


def pool(env_id, seeds, **options):
    return envpool.make_gymnasium(env_id, num_envs=len(seeds), batch_size=len(seeds),
                                  num_threads=1, seed=seeds[0], env_seed=list(seeds), **options)


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Humanoid-v5", "Walker2d-v5"])
def test_a_lean_pool_steps_exactly_as_envpools_own(env_id):
    options = lean_model_options(envpool.make_spec(env_id), {})
    assert set(options) == {"base_path"}
    seeds = [3, 90, 1234]
    own, lean = pool(env_id, seeds), pool(env_id, seeds, **options)
    np.testing.assert_array_equal(own.reset()[0], lean.reset()[0])
    rng = np.random.default_rng(0)
    for _ in range(40):  # Humanoid's and Walker2d's random episodes end (and reset) in these
        actions = rng.uniform(-1, 1, size=(len(seeds), *own.action_space.shape))
        ours, theirs = own.step(actions.astype(np.float32)), lean.step(actions.astype(np.float32))
        for a, b in zip(ours[:4], theirs[:4], strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_lean_models_have_no_textures_or_materials_and_the_same_bodies():
    folder = Path(lean_model_options(envpool.make_spec("Humanoid-v5"), {})["base_path"])
    original = Path(envpool.make_spec("Humanoid-v5").config.base_path)
    names = sorted(p.name for p in (original / ASSETS).iterdir())
    assert sorted(p.name for p in (folder / ASSETS).iterdir()) == names
    lean = ElementTree.parse(folder / ASSETS / "humanoid_envpool.xml").getroot()
    own = ElementTree.parse(original / ASSETS / "humanoid_envpool.xml").getroot()
    assert own.find(".//texture") is not None and own.find(".//*[@material]") is not None
    assert lean.find(".//texture") is None and lean.find(".//material") is None
    assert lean.find(".//*[@material]") is None
    assert len(lean.findall(".//body")) == len(own.findall(".//body")) > 10


@pytest.mark.parametrize("env_id, env_config", [
    ("HalfCheetah-v5", {"xml_file": "half_cheetah.xml"}),  # the user's model: theirs
    ("CartPole-v1", {}),  # no MuJoCo model
    ("CheetahRun-v1", {}),  # dm_control's models read other files
])
def test_other_envs_keep_their_own_model(env_id, env_config):
    assert lean_model_options(envpool.make_spec(env_id), env_config) == {}


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty user cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    envpool_models._lean_assets.cache_clear()
    yield tmp_path / "cache" / "neurorun"
    envpool_models._lean_assets.cache_clear()


def test_without_a_writable_cache_the_envs_keep_their_own_model(tmp_path, cache):
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assert lean_model_options(envpool.make_spec("Hopper-v5"), {}) == {}


def test_the_copy_is_made_once_and_a_changed_one_is_rewritten(cache):
    spec = envpool.make_spec("Hopper-v5")
    folder = Path(lean_model_options(spec, {})["base_path"])
    assert folder.parent == cache and [p.name for p in cache.iterdir()] == [folder.name]
    model = folder / ASSETS / "hopper_envpool.xml"
    made = model.read_bytes()
    model.write_bytes(made.replace(b"<body", b"<body pos='0 0 9'", 1))  # changed since
    envpool_models._lean_assets.cache_clear()  # a new process
    assert lean_model_options(spec, {}) == {"base_path": str(folder)}
    assert model.read_bytes() == made and [p.name for p in cache.iterdir()] == [folder.name]


def test_a_pool_the_copy_cannot_build_is_built_from_envpools_own_models(monkeypatch, tmp_path,
                                                                          caplog):
    """The copy removed under a long run (an empty folder here): one warning, then EnvPool's
    own models, for this pool and the next."""
    from neurorun.envs import envpool_env

    monkeypatch.setattr(envpool_env, "lean_model_options",
                        lambda spec, config: {"base_path": str(tmp_path)})
    env = envpool_env.EnvPoolVecEnv("Hopper-v5", 2, seed=4)
    with caplog.at_level("WARNING", logger="neurorun.envs.envpool_env"):
        obs = env.reset_arrays()
        again = env.reset_arrays(seed=4)
    np.testing.assert_array_equal(obs, pool("Hopper-v5", [4, 5]).reset()[0].astype(np.float32))
    np.testing.assert_array_equal(again, obs)
    assert [r.getMessage() for r in caplog.records if "copy of its models" in r.getMessage()]
    assert len(caplog.records) == 1
    env.close()
