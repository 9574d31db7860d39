"""The benchmark: denoise a noisy sine wave with model.smooth and print the negative mean squared
error (larger is better). The noise depends on the unit's seed ($RATCHET_SEED)."""

import json
import math
import os
import random

from model.smooth import smooth

seed = int(os.environ.get("RATCHET_SEED", "0"))
rng = random.Random(seed)
clean = [math.sin(i / 15.0) for i in range(600)]
noisy = [c + rng.gauss(0.0, 0.4) for c in clean]
out = smooth(noisy)
mse = sum((a - b) ** 2 for a, b in zip(out, clean, strict=True)) / len(clean)
print(json.dumps({"score": -mse}))
