"""meshc: compile a named-dimension model for a device mesh, and run it.

    import meshc
    program = meshc.compile("examples/mlp/mlp.mtf", mesh="b:2;m:4",
                            layout="batch:b;hidden:m")
    program.explain()["collectives"]        # what the layout communicates
    session = meshc.Session(program)        # 8 CPU virtual devices
    session.train({"x": x, "labels": labels}, steps=800)
    session.params["w1"]                    # a global numpy array

The package wraps meshc's compile API (the `meshc` tool's) and the runtime's
sessions (`meshrun`'s): the same programs, numbers and messages. See
docs/python.md.
"""

from ._compile import CompileError, Diagnostic, Program, compile
from ._session import RunError, Session

__all__ = [
    "CompileError",
    "Diagnostic",
    "Program",
    "RunError",
    "Session",
    "compile",
]
