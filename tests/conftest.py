"""Settings of the whole test session."""

import os

# jax makes its CPU host devices once, when it starts: 4 of them let the tests run the compiled
# evaluation on 1, 2 or 4 devices (tests/problems/test_devices.py); what the user's XLA_FLAGS
# force is kept
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=4").strip()
