import os
import sys

import pytest

from neurorun.common.streams import native_output


@pytest.mark.parametrize("descriptor", [1, 2])
def test_native_writes_are_caught_and_python_lines_before_are_not(descriptor, capfd):
    stream = sys.stdout if descriptor == 1 else sys.stderr
    print("before", file=stream, end="\n")  # buffered in Python: flushed before the switch
    with native_output(descriptor) as lines:
        os.write(descriptor, b"graph(%x):\n\n  return (%x)\n")
        assert lines == []  # filled once the block ends
    print("after", file=stream)
    captured = capfd.readouterr()
    assert (captured.out if descriptor == 1 else captured.err) == "before\nafter\n"
    assert lines == ["graph(%x):", "  return (%x)"]


def test_the_lines_are_kept_and_the_descriptor_restored_when_the_block_raises(capfd):
    with pytest.raises(ValueError), native_output(2) as lines:
        os.write(2, b"Failed to determine local IP\n")
        raise ValueError("ray.init failed")
    os.write(2, b"restored\n")
    assert lines == ["Failed to determine local IP"]
    assert capfd.readouterr().err == "restored\n"
