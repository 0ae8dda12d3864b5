"""meshc.Session: a compiled program on a mesh of devices (docs/python.md)."""

from __future__ import annotations

import os
from typing import Callable, Mapping, Optional, Union

import numpy as np

from . import _meshc
from ._compile import PathLike, Program

RunError = _meshc.RunError
"""The runtime refuses an input, checkpoint or device count, or a device
failed (RuntimeError, with meshrun's message)."""

Arrays = Mapping[str, "np.typing.ArrayLike"]


def _arrays(inputs: Optional[Arrays], program: Program,
            what: str) -> dict[str, np.ndarray]:
    """`inputs` as C-ordered float32/int32 arrays, each checked against the
    program's input of that name (the runtime checks shapes): any floating
    array for an f32 input (rounded to float32), an integer array whose
    values int32 holds for an i32 one; anything else is refused."""
    if inputs is None:
        return {}
    if not isinstance(inputs, Mapping):
        raise TypeError(f"{what} must map input names to arrays, got "
                        f"{type(inputs).__name__}")
    declared = program.inputs
    arrays = {}
    for name, value in inputs.items():
        if name not in declared:
            raise RunError(
                f"{what}: {program.name} has no input '{name}' (inputs: "
                + ", ".join(f"'{n}'" for n in declared) + ")")
        dtype = np.float32 if declared[name][0] == "f32" else np.int32
        array = np.asarray(value)
        if array.dtype != dtype:
            same_kind = (np.issubdtype(array.dtype, np.floating)
                         if dtype is np.float32 else
                         np.issubdtype(array.dtype, np.integer))
            if not same_kind:
                raise RunError(
                    f"{what}: input '{name}' is {declared[name][0]} but the "
                    f"array's dtype is {array.dtype}")
            converted = array.astype(dtype)
            if dtype is np.int32 and not np.array_equal(converted, array):
                raise RunError(
                    f"{what}: input '{name}' is i32, and its {array.dtype} "
                    "values do not all fit it")
            array = converted
        arrays[name] = np.ascontiguousarray(array)
    return arrays


class Session:
    """A program set up on its devices, as meshrun sets it up.

    ``backend`` is "cpu" (one virtual device per mesh device, threads);
    ``devices`` must be the program's device count when given. Parameters
    are initialised from the program's seed (or ``seed``) at once.
    """

    def __init__(self, program: Program, *, devices: Optional[int] = None,
                 backend: str = "cpu", seed: Optional[int] = None,
                 overlap: str = "auto"):
        if overlap not in ("auto", "on", "off"):
            raise ValueError("overlap must be 'auto', 'on' or 'off', got "
                             f"{overlap!r}")
        if not isinstance(program, Program):
            raise TypeError("program must be a meshc.Program (meshc.compile "
                            f"or Program.load), got {type(program).__name__}")
        self.program = program
        self._train_inputs: dict[str, np.ndarray] = {}
        self._shuffle = True
        self._session = _meshc.Session(program.json, program.name,
                                       0 if devices is None else devices,
                                       backend, seed, overlap)

    @property
    def devices(self) -> int:
        return self._session.devices

    @property
    def step(self) -> int:
        """Training runs so far (restored ones included)."""
        return self._session.training_runs

    @property
    def params(self) -> dict[str, np.ndarray]:
        """Every parameter (optimizer state too: "w1/adam_m") as a global
        array assembled from the devices' blocks."""
        return self._session.params()

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Every output of the latest run (of a training run: its values
        before the update, e.g. ``grad/w1`` of ``output_grads=True``; of a
        run with microbatches: their mean), as global arrays."""
        return self._session.outputs()

    def run(self, inputs: Optional[Arrays] = None) -> dict[str, np.ndarray]:
        """One forward run (dropout off, nothing trained) on ``inputs`` of
        the program's global shapes; inputs not given are synthetic.
        Returns every output."""
        arrays = _arrays(inputs, self.program, "inputs")
        for name, array in arrays.items():
            shape = self.program.inputs[name][1]
            if array.shape != shape:
                raise RunError(
                    f"inputs: input '{name}' has shape {shape} but the array "
                    f"{array.shape}; run() takes one batch (train() and "
                    "evaluate() take sets of examples)")
        self._session.bind(arrays, {}, False)
        self._train_inputs = {}
        self._session.run_step(False)
        return self.outputs

    def train(self, inputs: Optional[Arrays] = None, *, steps: int = 1,
              shuffle: bool = True,
              progress: Optional[Callable[[int, dict[str, float]], None]] = None
              ) -> list[dict[str, float]]:
        """Runs ``steps`` training runs and returns each one's scalar
        outputs (the loss, ...).

        An input array of the program's shape is used in every run; one of
        N examples along its first dim is a dataset read in batches, epoch
        after epoch, shuffled per epoch unless ``shuffle`` is false (as
        meshrun reads a .npy of N rows). ``progress(step, outputs)`` is
        called after every run.
        """
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
            raise ValueError(f"steps must be an int >= 0, got {steps!r}")
        arrays = _arrays(inputs, self.program, "inputs")
        self._session.bind(arrays, {}, shuffle)
        self._train_inputs, self._shuffle = arrays, shuffle
        history = []
        for _ in range(steps):
            self._session.run_step(True)
            scalars = self._session.scalars()
            history.append(scalars)
            if progress is not None:
                progress(self._session.training_runs, scalars)
        return history

    def evaluate(self, inputs: Arrays) -> dict[str, float]:
        """The scalar outputs averaged over the full batches of an eval
        set (arrays of N >= batch examples), as meshrun's eval line."""
        arrays = _arrays(inputs, self.program, "eval inputs")
        # The training set stays bound (the run order goes on from it); an
        # input it lacks reads the eval set's first batch in its place.
        train = dict(arrays)
        train.update(self._train_inputs)
        self._session.bind(train, arrays, self._shuffle)
        batches = self._session.eval_batches
        sums: dict[str, float] = {}
        for batch in range(batches):
            self._session.run_eval_batch(batch)
            for name, value in self._session.scalars().items():
                sums[name] = sums.get(name, 0.0) + value
        return {name: total / batches for name, total in sums.items()}

    def save(self, directory: PathLike, *, keep: int = 2) -> str:
        """Writes a checkpoint as meshrun --checkpoint does:
        DIRECTORY/step-<N>/, keeping the newest ``keep``. Returns its
        folder."""
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an int >= 1, got {keep!r}")
        return self._session.save(os.fspath(directory), keep)

    def restore(self, path: PathLike) -> str:
        """Reads a checkpoint (a directory's latest step, or a step folder),
        of any mesh or layout, as meshrun --restore does. Returns the step
        folder read."""
        return self._session.restore(os.fspath(path))

    def __repr__(self) -> str:
        return (f"<meshc.Session {self.program.name} on {self.devices} "
                f"{self._session.backend} devices, step {self.step}>")
