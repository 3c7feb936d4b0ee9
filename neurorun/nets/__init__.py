"""Policy networks: the network-string language, parameter vectors and batched policies.

``parse_network`` and ``make_network`` build a policy module; ``parameter_count``,
``module_to_vector`` and ``vector_to_module`` convert between a module and its flat parameter
vector; ``BatchedPolicy`` evaluates a whole population of parameter vectors at once.
"""

from neurorun.nets.batched import BatchedPolicy, NetworkSizeError
from neurorun.nets.chain import Chain, is_recurrent
from neurorun.nets.layers import Apply, Bin, Clip, Round, Slice
from neurorun.nets.network_spec import make_network
from neurorun.nets.parser import NetworkParseError, parse_network
from neurorun.nets.recurrent import GRU, LSTM, RNN
from neurorun.nets.vectors import module_to_vector, parameter_count, vector_to_module

__all__ = [
    "GRU",
    "LSTM",
    "RNN",
    "Apply",
    "BatchedPolicy",
    "Bin",
    "Chain",
    "Clip",
    "NetworkParseError",
    "NetworkSizeError",
    "Round",
    "Slice",
    "is_recurrent",
    "make_network",
    "module_to_vector",
    "parameter_count",
    "parse_network",
    "vector_to_module",
]
