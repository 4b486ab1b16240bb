#!/usr/bin/env python3
"""scikit-learn's forward selection on the data sfs_bench wrote.

Usage: sfs_sklearn.py DATA.npy [N_SELECT] [FOLDS]
DATA.npy holds a float64 matrix whose last column is the target. Prints one
line: "SKLEARN selected=<comma-separated columns> seconds=<wall time>".
Selection uses LinearRegression, cv=FOLDS (KFold without shuffling) and the
default R^2 scoring, as sfs_bench's like-for-like run does.
"""
import sys
import time

import numpy as np
from sklearn.feature_selection import SequentialFeatureSelector
from sklearn.linear_model import LinearRegression


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    data = np.load(sys.argv[1])
    n_select = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    folds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    x, y = data[:, :-1], data[:, -1]
    start = time.perf_counter()
    selector = SequentialFeatureSelector(
        LinearRegression(), n_features_to_select=n_select, direction="forward", cv=folds)
    selector.fit(x, y)
    seconds = time.perf_counter() - start
    selected = np.flatnonzero(selector.get_support())
    print("SKLEARN selected=%s seconds=%.3f" % (",".join(str(c) for c in selected), seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
