"""Benchmark: accuracy of an SVM on scikit-learn's bundled handwritten digits (UCI ML digits).

One job = one unit: the seed in RATCHET_SEED fixes the train/test split and the model's randomness,
so the champion and a candidate measured on the same seed see exactly the same data.
Prints one JSON line: {"accuracy": <fraction of test digits classified correctly>}.
"""

import json
import os
import tomllib

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

seed = int(os.environ.get("RATCHET_SEED", "0"))
with open("params.toml", "rb") as f:
    params = tomllib.load(f)

X, y = load_digits(return_X_y=True)
# A small training set keeps every job well under a second and leaves room for real gains.
X_train, X_test, y_train, y_test = train_test_split(
    X, y, train_size=300, test_size=600, stratify=y, random_state=seed
)
model = make_pipeline(
    StandardScaler(),
    SVC(C=float(params["C"]), gamma=float(params["gamma"]), kernel=str(params["kernel"]), random_state=seed),
)
model.fit(X_train, y_train)
print(json.dumps({"accuracy": float(model.score(X_test, y_test))}))
