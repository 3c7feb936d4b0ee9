"""Run exported TorchScript policies where neurorun cannot be imported (tests/tools/test_export.py).

    python -I -S torchscript_fresh.py SITE_PACKAGES OBS.pt POLICY.pt OUT.pt [POLICY.pt OUT.pt ...]

-S keeps site-packages (where neurorun is installed, editable or not) off sys.path; only the
folder that holds torch is put back, without its .pth files, so `import neurorun` must fail.
Each policy runs two steps on the observations: from the zero state its metadata describes,
then from the state the first step returned; OUT.pt holds both steps' outputs.
"""

import importlib.util
import json
import sys

sys.path.append(sys.argv[1])
if importlib.util.find_spec("neurorun") is not None:
    sys.exit("neurorun is importable here: this check would prove nothing")
import torch  # noqa: E402

obs = torch.load(sys.argv[2])
for policy, out in zip(sys.argv[3::2], sys.argv[4::2], strict=True):
    files = {"neurorun.json": ""}
    module = torch.jit.load(policy, _extra_files=files)
    inputs = json.loads(files["neurorun.json"])["inputs"]
    state = [torch.zeros(len(obs), *item["shape"][1:]) for item in inputs[1:]]
    steps = []
    with torch.no_grad():
        for _ in range(2):
            result = module(obs, *state)
            action, *state = result if isinstance(result, tuple) else (result,)
            steps.append([action, *state])
    torch.save(steps, out)
print("ran without neurorun:", ", ".join(sorted(sys.modules.keys() & {"torch", "neurorun"})))
