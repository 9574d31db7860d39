"""Benchmark: how long an SVM takes to train and score on scikit-learn's bundled handwritten digits
(UCI ML digits; real data, no network), and how accurate it is.

One job = one unit: the seed in RATCHET_SEED fixes the train/test split and the model's randomness,
so the champion and a candidate measured on the same seed see exactly the same data.
Prints one JSON line: {"seconds": <wall seconds of REPEATS fits and scores>, "accuracy": <fraction of
test digits classified correctly>}. `seconds` is the metric Ratchet lowers; `accuracy` is a guardrail.
"""

import json
import os
import time
import tomllib

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

REPEATS = 5  # fits per job: a longer timed stretch makes the timing noise smaller than the gains

seed = int(os.environ.get("RATCHET_SEED", "0"))
with open("params.toml", "rb") as f:
    params = tomllib.load(f)

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=1400, test_size=397, stratify=y, random_state=seed
)
rows = int(params["train_rows"])  # train on the first `rows` training digits only
start = time.perf_counter()
for _ in range(REPEATS):
    model = make_pipeline(
        StandardScaler(),
        SVC(C=10.0, gamma=0.01, tol=float(params["tol"]), shrinking=bool(params["shrinking"]),
            cache_size=float(params["cache_mb"]), random_state=seed),
    )
    model.fit(X_train[:rows], y_train[:rows])
    accuracy = float(model.score(X_test, y_test))
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "accuracy": accuracy}))
