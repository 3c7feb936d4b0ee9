"""After-run tools: evaluate, render, plot, compare and export neurorun runs.

Console scripts (each module's ``main``):
    neurorun-eval     neurorun.tools.evaluate:main   seeded test episodes of a saved policy
    neurorun-render   neurorun.tools.render:main     a GIF/MP4 (or brax HTML) of a saved policy
    neurorun-plot     neurorun.tools.plot:main       learning curves (needs neurorun[plots])
    neurorun-compare  neurorun.tools.compare:main    final/best scores per sweep group
    neurorun-export   neurorun.tools.export:main     a policy as one ONNX or TorchScript file

Bad input ends with one line on stderr and exit status 2; outputs are written to a temporary
file and renamed, so a failed command leaves existing files as they were.
"""
