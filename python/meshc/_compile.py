"""meshc.compile and Program (docs/python.md)."""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from . import _meshc

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Diagnostic:
    """One error, warning or note of a compile, where the model says it."""

    severity: str
    """"error", "warning" or "note"."""
    message: str
    file: Optional[str] = None
    """The model file (or "<source>"), a spec file; None for a flag."""
    line: Optional[int] = None
    column: Optional[int] = None
    hint: Optional[str] = None
    notes: tuple["Diagnostic", ...] = field(default_factory=tuple)

    @staticmethod
    def _from(data: dict) -> "Diagnostic":
        return Diagnostic(
            severity=data["severity"],
            message=data["message"],
            file=data["file"],
            line=data["line"],
            column=data["column"],
            hint=data["hint"],
            notes=tuple(Diagnostic._from(note) for note in data["notes"]),
        )

    def __str__(self) -> str:
        place = ""
        if self.file is not None:
            place = self.file
            if self.line is not None:
                place += f":{self.line}:{self.column}"
            place += ": "
        text = f"{place}{self.severity}: {self.message}"
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text


class CompileError(Exception):
    """A model, mesh, layout or option meshc refuses.

    ``message``, ``file``, ``line``, ``column`` and ``hint`` are those of the
    first error; ``diagnostics`` lists every error, warning and note;
    ``text`` is what the ``meshc`` tool prints for the same compile.
    """

    def __init__(self, diagnostics: list[Diagnostic], text: str):
        errors = [d for d in diagnostics if d.severity == "error"]
        first = errors[0] if errors else Diagnostic("error", text.strip() or
                                                    "meshc failed")
        super().__init__(str(first))
        self.diagnostics = diagnostics
        self.text = text
        self.message = first.message
        self.file = first.file
        self.line = first.line
        self.column = first.column
        self.hint = first.hint


class Program:
    """A compiled SPMD program (the .mprog meshc writes).

    Made by :func:`compile` (with its explanation) or :meth:`load`.
    """

    def __init__(self, mprog: str, explanation: Optional[str] = None,
                 name: str = "<program>"):
        self._text = mprog
        self._data = json.loads(mprog)
        self._explanation = explanation
        self.name = name
        """The name errors of the runtime give the program (its file)."""
        self.search_report = ""
        """``layout="auto"``'s report: the search's summary and best
        layouts ("" otherwise)."""

    @classmethod
    def load(cls, path: PathLike) -> "Program":
        """Reads a .mprog file (the runtime's loader checks it when a
        Session is made)."""
        with open(path, encoding="utf-8") as file:
            text = file.read()
        try:
            return cls(text, name=os.fspath(path))
        except json.JSONDecodeError as error:
            raise ValueError(f"{os.fspath(path)}: not a .mprog (JSON): "
                             f"{error}") from None

    def save(self, path: PathLike) -> None:
        """Writes the program as a .mprog file that meshrun runs."""
        with open(path, "w", encoding="utf-8") as file:
            file.write(self._text)

    def explain(self) -> dict[str, Any]:
        """The report of ``meshc --explain=json`` (docs/explain-json.md):
        ``tensors``, ``collectives``, ``memory``, ``prediction``, ..."""
        if self._explanation is None:
            raise ValueError(
                f"{self.name} was loaded from a .mprog, which carries no "
                "explanation; compile the model with meshc.compile")
        return json.loads(self._explanation)

    @property
    def json(self) -> str:
        """The .mprog text."""
        return self._text

    @property
    def mesh(self) -> str:
        """The mesh, as ``--mesh`` spells it ("" for one device)."""
        axes = self._data.get("mesh", [])
        return ";".join(f"{axis['name']}:{axis['size']}" for axis in axes)

    @property
    def devices(self) -> int:
        """The number of devices the program runs on."""
        count = 1
        for axis in self._data.get("mesh", []):
            count *= axis["size"]
        return count

    def _tensors(self, role: str) -> dict[str, tuple[str, tuple[int, ...]]]:
        return {
            t["name"]: (t["dtype"], tuple(d["size"] for d in t["dims"]))
            for t in self._data.get("tensors", []) if t["role"] == role
        }

    @property
    def inputs(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """Input name to (dtype, global shape)."""
        return self._tensors("input")

    @property
    def outputs(self) -> dict[str, tuple[str, tuple[int, ...]]]:
        """Output name to (dtype, global shape)."""
        return self._tensors("output")

    def __repr__(self) -> str:
        return f"<meshc.Program {self.name} on {self.devices} devices>"


def _source(model: Union[PathLike, str]) -> tuple[str, str, bool]:
    """(text or path, name, whether it is a file)."""
    if isinstance(model, os.PathLike):
        path = os.fspath(model)
        return path, path, True
    if not isinstance(model, str):
        raise TypeError(
            f"model must be a path or the model's source text, got "
            f"{type(model).__name__}")
    if "\n" in model:
        return model, "<source>", False
    return model, model, True


def compile(model: Union[PathLike, str], *,
            mesh: Optional[str] = None,
            layout: Optional[str] = None,
            spec: Optional[PathLike] = None,
            axis_weights: Optional[str] = None,
            uneven: bool = False,
            precision: str = "f32",
            remat: str = "marked",
            repeat: Optional[str] = None,
            microbatches: int = 1,
            microbatch_dim: Optional[str] = None,
            pipeline_schedule: str = "gpipe",
            virtual_stages: Optional[int] = None,
            shard_optimizer: bool = False,
            shard_params: bool = False,
            machine: Optional[str] = None,
            memory_limit: Optional[str] = None,
            bucket_size: str = "128MiB",
            overlap_limit: str = "1GiB",
            fuse: bool = True,
            fuse_attention: bool = True,
            schedule: bool = True,
            prefetch: bool = True,
            interleave_halves: Union[bool, str] = False,
            keep_gathered: bool = False,
            seed: int = 0,
            output_grads: bool = False) -> Program:
    """Compiles a model for a mesh and layout, as the ``meshc`` tool does.

    ``model`` is a path (a .mtf model, or mtf IR in a .mlir file) or the
    text of a .mtf model (any string holding a newline). Every keyword is
    the meshc flag of the same name (``meshc --help``, docs/language.md):
    ``layout="auto"`` searches (its report in ``Program.search_report``),
    ``fuse=False`` is ``--no-fuse``, ``pipeline_schedule`` is ``--schedule``
    (``schedule=False`` is ``--no-schedule``). Raises :class:`CompileError` with the
    file, line, column, message and hint meshc would print; warnings become
    Python warnings.
    """
    source, name, from_file = _source(model)
    checks = {
        "uneven": (uneven, bool), "shard_optimizer": (shard_optimizer, bool),
        "shard_params": (shard_params, bool),
        "fuse": (fuse, bool), "fuse_attention": (fuse_attention, bool),
        "schedule": (schedule, bool), "prefetch": (prefetch, bool),
        "keep_gathered": (keep_gathered, bool),
        "output_grads": (output_grads, bool),
        "microbatches": (microbatches, int), "seed": (seed, int),
    }
    for key, (value, kind) in checks.items():
        if not isinstance(value, kind) or (kind is int and
                                           isinstance(value, bool)):
            raise TypeError(f"{key} must be {kind.__name__}, got {value!r}")
    if not isinstance(interleave_halves, (bool, str)):
        raise TypeError("interleave_halves must be bool or str, got "
                        f"{interleave_halves!r}")
    if isinstance(interleave_halves, bool):
        interleave_halves = "all" if interleave_halves else "off"
    if virtual_stages is not None and (not isinstance(virtual_stages, int) or
                                       isinstance(virtual_stages, bool)):
        raise TypeError("virtual_stages must be int, got "
                        f"{virtual_stages!r}")
    if seed < 0:
        raise ValueError(f"seed must be at least 0, got {seed}")
    options = {
        "mesh": mesh, "layout": layout,
        "spec": os.fspath(spec) if spec is not None else None,
        "axis_weights": axis_weights, "uneven": uneven,
        "precision": precision, "remat": remat, "repeat": repeat,
        "microbatches": microbatches, "microbatch_dim": microbatch_dim,
        "pipeline_schedule": pipeline_schedule,
        "virtual_stages": virtual_stages,
        "shard_optimizer": shard_optimizer, "shard_params": shard_params,
        "machine": machine,
        "memory_limit": memory_limit, "bucket_size": bucket_size,
        "overlap_limit": overlap_limit, "fuse": fuse,
        "fuse_attention": fuse_attention, "schedule": schedule,
        "prefetch": prefetch, "interleave_halves": interleave_halves,
        "keep_gathered": keep_gathered,
        "seed": seed,
        "output_grads": output_grads,
    }
    result = _meshc.compile(source, name, from_file, options)
    diagnostics = [Diagnostic._from(d) for d in result["diagnostics"]]
    if not result["ok"]:
        raise CompileError(diagnostics, result["text"])
    for diagnostic in diagnostics:
        if diagnostic.severity == "warning":
            warnings.warn(str(diagnostic), stacklevel=2)
    program = Program(result["program"], result["explanation"],
                      name if from_file else "<source>")
    program.search_report = result["search_report"]
    return program
