"""Writes the datasets of microbatches.test into DIR: the MLP's x.npy
[256, 64] f32 and labels.npy [256] i32 (10 classes), and charlm's
tokens.npy / targets.npy [64, 64] i32 (vocabulary 64, targets the tokens
shifted by one), all from a fixed seed."""
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
np.save(os.path.join(out, "x.npy"), rng.standard_normal((256, 64)).astype(np.float32))
np.save(os.path.join(out, "labels.npy"), rng.integers(0, 10, 256).astype(np.int32))
text = rng.integers(0, 64, (64, 65)).astype(np.int32)
np.save(os.path.join(out, "tokens.npy"), np.ascontiguousarray(text[:, :64]))
np.save(os.path.join(out, "targets.npy"), np.ascontiguousarray(text[:, 1:]))
