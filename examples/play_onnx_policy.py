"""Play a policy exported by neurorun-export with gymnasium and onnxruntime alone (no torch).

    neurorun-export runs/CartPole-v1/pgpe/<run> --out policy.onnx
    python examples/play_onnx_policy.py policy.onnx --seed 0 --episodes 3

Episode i is reset with seed + i and cut at the run's episode_length, as neurorun-eval plays
it; a recurrent policy's state starts at zeros in each episode (docs/checkpoints.md).
"""

import argparse
import json

import gymnasium as gym
import numpy as np
import onnxruntime

parser = argparse.ArgumentParser(description="Play an exported ONNX policy on its gymnasium env")
parser.add_argument("policy", help="a .onnx file written by neurorun-export")
parser.add_argument("--seed", type=int, default=0, help="episode i is seeded seed + i")
parser.add_argument("--episodes", type=int, default=1)
args = parser.parse_args()

session = onnxruntime.InferenceSession(args.policy, providers=["CPUExecutionProvider"])
meta = json.loads(session.get_modelmeta().custom_metadata_map["neurorun"])
backend, _, env_id = meta["env"].rpartition("::")  # "Id", "gym::Id" or "envpool::Id"
if backend not in ("", "gym", "envpool"):
    parser.error(f"{meta['env']!r} is not a gymnasium env: this script plays gymnasium envs")
env = gym.make(env_id, **meta["env_config"])
states = [item for item in meta["inputs"] if item["name"] != "obs"]  # recurrent nets only
for episode in range(args.episodes):
    obs, _ = env.reset(seed=args.seed + episode)
    feeds = {item["name"]: np.zeros([1, *item["shape"][1:]], np.float32) for item in states}
    total, steps, done = 0.0, 0, False
    while not done:
        action, *state = session.run(None, {"obs": obs[None].astype(np.float32), **feeds})
        feeds = dict(zip(feeds, state, strict=True))  # state_out_k is the next step's state_in_k
        obs, reward, terminated, truncated, _ = env.step(action[0])
        total, steps = total + float(reward), steps + 1
        done = terminated or truncated or steps == meta["episode_length"]
    print(f"episode {episode} (seed {args.seed + episode}): return {total!r}, {steps} steps")
