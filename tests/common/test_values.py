"""`shown`: a value as an override writes it, read back by Hydra's own override parser."""

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from neurorun.common.values import shown


@pytest.mark.parametrize("value", [
    None, True, False, 4, 0.5, "auto", "CartPole-v1", [0, 1], [None, False],
    {"num_cpus": 1, "resources": {"gpu_slot": 2}}, {"memory": None, "spread": True}, [],
    {},
])
def test_a_value_shown_parses_back_to_itself(value):
    parsed = OverridesParser.create().parse_override(f"key={shown(value)}").value()
    assert parsed == value and type(parsed) is type(value)


def test_a_mapping_is_written_in_override_syntax_not_as_a_python_dict():
    assert shown({"num_cpus": 1, "memory": None}) == "{num_cpus:1, memory:null}"
