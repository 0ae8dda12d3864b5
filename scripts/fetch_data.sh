#!/usr/bin/env bash
# Builds the real data sets under data/ (gitignored) from Debian packages, which
# are fetched with `apt-get download` (nothing is installed) and unpacked into a
# temporary folder:
#
#   data/digits/    the 8x8 digit images of scikit-learn's digits.csv.gz
#                   (package python3-sklearn): {train,test}_x.npy f32 [N, 64]
#                   (pixel / 16), {train,test}_labels.npy i32 [N]; a fixed-seed
#                   split of 1,437 train / 360 test images.
#   data/fortunes/  a character-level language-model corpus: the fortune
#                   cookies of the package `fortunes`; vocab.json and
#                   {train,test}_{tokens,targets}.npy i32 [N, SEQ_LEN]
#                   (targets = tokens shifted by one character).
#
# docs/data.md describes the formats and the splits. Idempotent: a data set
# whose files exist and whose meta.json matches the requested options is left
# alone, so a second run takes well under a second.
#
# usage: scripts/fetch_data.sh [--seq-len N] [--vocab-size N] [--force]
#   --seq-len N     length of the fortunes token windows (default 64)
#   --vocab-size N  character vocabulary, "other" included (default 64)
#   --force         rebuild even when the data is present
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
data="$root/data"

seq_len=64
vocab_size=64
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seq-len) seq_len="${2:?--seq-len needs a value}"; shift 2 ;;
    --seq-len=*) seq_len="${1#*=}"; shift ;;
    --vocab-size) vocab_size="${2:?--vocab-size needs a value}"; shift 2 ;;
    --vocab-size=*) vocab_size="${1#*=}"; shift ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch_data: error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$seq_len" =~ ^[0-9]+$ ]] || [ "$seq_len" -lt 1 ]; then
  echo "fetch_data: error: --seq-len must be a positive integer, not '$seq_len'" >&2; exit 2
fi
if ! [[ "$vocab_size" =~ ^[0-9]+$ ]] || [ "$vocab_size" -lt 2 ]; then
  echo "fetch_data: error: --vocab-size must be an integer >= 2, not '$vocab_size'" >&2; exit 2
fi

# An interpreter with numpy: Debian's python3 with python3-numpy (setup.sh
# installs both), else the JAX venv, else whatever python3 is on PATH.
python=""
for candidate in /usr/bin/python3 "$root/.venv/bin/python" python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import numpy' 2>/dev/null; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "fetch_data: error: no python3 with numpy; install the Debian package python3-numpy (scripts/setup.sh does)" >&2
  exit 1
fi

# The fast path: each data set is complete and was built with these options.
if [ "$force" -eq 0 ] && "$python" - "$data" "$seq_len" "$vocab_size" <<'EOF'
import json, os, sys
data, seq_len, vocab_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = {
    "digits": ({}, ["train_x.npy", "train_labels.npy", "test_x.npy", "test_labels.npy"]),
    "fortunes": ({"seq_len": seq_len, "vocab_size": vocab_size},
                 ["vocab.json", "train_tokens.npy", "train_targets.npy",
                  "test_tokens.npy", "test_targets.npy"]),
}
lines = []
for name, (options, files) in want.items():
    try:
        with open(os.path.join(data, name, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        sys.exit(1)
    if any(meta.get(k) != v for k, v in options.items()):
        sys.exit(1)
    if not all(os.path.exists(os.path.join(data, name, f)) for f in files):
        sys.exit(1)
    lines.append(meta["summary"] + " (present)")
for line in lines:
    print("fetch_data: " + line)
EOF
then
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# apt-get download PACKAGE into $work. The package lists may be missing (Docker
# images delete them) or stale (the pool no longer has the candidate): then
# update them once and try again.
updated=0
download() {
  local package="$1"
  # apt drops privileges to _apt for downloads; let it write here.
  if [ "$(id -u)" -eq 0 ] && id _apt >/dev/null 2>&1; then chown _apt "$work"; fi
  if (cd "$work" && apt-get download -qq "$package" >"$work/apt.log" 2>&1); then
    return 0
  fi
  if [ "$updated" -eq 0 ]; then
    local sudo=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then sudo="sudo"; fi
    echo "fetch_data: apt-get download $package failed; updating the package lists and retrying" >&2
    $sudo apt-get update -qq >"$work/apt-update.log" 2>&1 || true
    updated=1
    if (cd "$work" && apt-get download -qq "$package" >"$work/apt.log" 2>&1); then
      return 0
    fi
  fi
  echo "fetch_data: error: 'apt-get download $package' failed:" >&2
  sed 's/^/  /' "$work/apt.log" >&2
  echo "fetch_data: (is a Debian mirror reachable, and 'apt-get update' done as root?)" >&2
  exit 1
}

# Unpack the .deb of PACKAGE (downloaded by `download`) into $work/PACKAGE,
# only the members named after it.
extract() {
  local package="$1"; shift
  local deb
  deb="$(ls "$work"/"${package}"_*.deb 2>/dev/null | head -n 1)"
  if [ -z "$deb" ]; then
    echo "fetch_data: error: no .deb for $package in $work after apt-get download" >&2; exit 1
  fi
  mkdir -p "$work/$package"
  if ! dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$work/$package" --wildcards "$@"; then
    echo "fetch_data: error: $(basename "$deb") does not hold $*" >&2; exit 1
  fi
  dpkg-deb -f "$deb" Version >"$work/$package.version"
}

download python3-sklearn
extract python3-sklearn './usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz'
download fortunes
extract fortunes './usr/share/games/fortunes/*'

"$python" - "$work" "$data" "$seq_len" "$vocab_size" <<'EOF'
import collections, gzip, hashlib, json, os, sys
import numpy as np

work, data, seq_len, vocab_size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
SEED = 0  # np.random.RandomState: its stream is frozen across numpy versions


def fail(message):
    print("fetch_data: error: " + message, file=sys.stderr)
    sys.exit(1)


def version(package):
    with open(os.path.join(work, package + ".version")) as f:
        return f.read().strip()


def save(folder, arrays, meta):
    """Writes the arrays, then meta.json last: its presence marks the set complete."""
    os.makedirs(folder, exist_ok=True)
    meta_path = os.path.join(folder, "meta.json")
    if os.path.exists(meta_path):
        os.remove(meta_path)
    for name, array in arrays.items():
        np.save(os.path.join(folder, name + ".npy"), array)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


# ---- digits ----------------------------------------------------------------
DIGITS_SHA256 = "46abec6b12486ad9e51943373abcf22bbea1b5a51a1619b361570d8893f1464a"
DIGITS_ROWS, DIGITS_TEST = 1797, 360
path = os.path.join(work, "python3-sklearn",
                    "usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz")
raw = open(path, "rb").read()
sha = hashlib.sha256(raw).hexdigest()
if sha != DIGITS_SHA256:
    fail(f"digits.csv.gz of python3-sklearn {version('python3-sklearn')} has sha256 {sha}, "
         f"expected {DIGITS_SHA256} (that of 1.2.1+dfsg-1); the data set or its split "
         "would differ from docs/data.md")
table = np.loadtxt(gzip.open(path, "rt"), delimiter=",", dtype=np.float64)
if table.shape != (DIGITS_ROWS, 65):
    fail(f"digits.csv.gz holds a {table.shape} table, expected ({DIGITS_ROWS}, 65)")
pixels, labels = table[:, :64], table[:, 64]
if pixels.min() < 0 or pixels.max() > 16 or set(np.unique(labels)) != set(range(10)):
    fail("digits.csv.gz: pixels outside 0..16 or labels outside 0..9")
order = np.random.RandomState(SEED).permutation(DIGITS_ROWS)
test, train = order[:DIGITS_TEST], order[DIGITS_TEST:]
x = (pixels / 16.0).astype(np.float32)
y = labels.astype(np.int32)
summary = (f"digits: {len(train)} train / {len(test)} test images, 64 pixels in [0, 1] (f32), "
           f"10 classes, from python3-sklearn {version('python3-sklearn')} -> data/digits")
save(os.path.join(data, "digits"),
     {"train_x": x[train], "train_labels": y[train], "test_x": x[test], "test_labels": y[test]},
     {"source": {"package": "python3-sklearn", "version": version("python3-sklearn"),
                 "file": "usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
                 "sha256": sha},
      "split": f"np.random.RandomState({SEED}).permutation({DIGITS_ROWS}): "
               f"the first {DIGITS_TEST} indices are test, the rest train, in that order",
      "train": len(train), "test": len(test), "summary": summary})
print("fetch_data: " + summary)

# ---- fortunes ----------------------------------------------------------------
FORTUNES_TEST_FRACTION = 0.05
folder = os.path.join(work, "fortunes", "usr/share/games/fortunes")
names = sorted(n for n in os.listdir(folder)
               if not n.endswith(".dat") and not os.path.islink(os.path.join(folder, n))
               and os.path.isfile(os.path.join(folder, n)))
if len(names) < 10:
    fail(f"the fortunes package holds only {len(names)} fortune files")
corpus_hash = hashlib.sha256()
cookies = []  # every fortune, its text up to (without) the "%" line
for name in names:
    raw = open(os.path.join(folder, name), "rb").read()
    corpus_hash.update(name.encode() + b"\0" + raw)
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    current = []
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == "%":
            if current:
                cookies.append("".join(current))
            current = []
        else:
            current.append(line)
    if "".join(current).strip():
        cookies.append("".join(current))
n_test = int(round(FORTUNES_TEST_FRACTION * len(cookies)))
order = np.random.RandomState(SEED).permutation(len(cookies))
test_ids = set(order[:n_test].tolist())
# Each split is its fortunes in file order, each followed by a "%" line.
train_text = "".join(c + "%\n" for i, c in enumerate(cookies) if i not in test_ids)
test_text = "".join(c + "%\n" for i, c in enumerate(cookies) if i in test_ids)

counts = collections.Counter(train_text)
ranked = sorted(counts.items(), key=lambda kv: (-kv[1], ord(kv[0])))
kept = [c for c, _ in ranked[:vocab_size - 1]]
OTHER = 0
char_to_id = {c: i + 1 for i, c in enumerate(kept)}
coverage = sum(counts[c] for c in kept) / len(train_text)


def windows(text):
    ids = np.fromiter((char_to_id.get(c, OTHER) for c in text), dtype=np.int32, count=len(text))
    n = (len(ids) - 1) // seq_len
    tokens = ids[:n * seq_len].reshape(n, seq_len)
    targets = ids[1:n * seq_len + 1].reshape(n, seq_len)
    return tokens, targets


train_tokens, train_targets = windows(train_text)
test_tokens, test_targets = windows(test_text)
if len(test_tokens) == 0:
    fail(f"--seq-len {seq_len} leaves no test window")
summary = (f"fortunes: {len(train_text):,} train / {len(test_text):,} test chars of "
           f"{len(cookies):,} fortunes ({len(names)} files, fortunes {version('fortunes')}), "
           f"{len(counts)} distinct chars, vocab {len(kept) + 1} ({len(kept)} + other, "
           f"{100 * coverage:.2f}% of train chars), seq {seq_len}: "
           f"{len(train_tokens):,} train / {len(test_tokens):,} test windows -> data/fortunes")
vocab = {"vocab_size": len(kept) + 1, "other_id": OTHER,
         "id_to_char": [None] + kept,
         "note": "id 0 stands for every character outside the vocabulary; ids 1.. are the "
                 "most frequent characters of the training text, most frequent first "
                 "(ties by code point)"}
out = os.path.join(data, "fortunes")
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "vocab.json"), "w") as f:
    json.dump(vocab, f, indent=1, ensure_ascii=False)
    f.write("\n")
save(out,
     {"train_tokens": train_tokens, "train_targets": train_targets,
      "test_tokens": test_tokens, "test_targets": test_targets},
     {"source": {"package": "fortunes", "version": version("fortunes"),
                 "files": ["usr/share/games/fortunes/" + n for n in names],
                 "sha256": corpus_hash.hexdigest()},
      "split": f"np.random.RandomState({SEED}).permutation(number of fortunes): the first "
               f"{n_test} ({FORTUNES_TEST_FRACTION:.0%}) are test; each split keeps file order",
      "seq_len": seq_len, "vocab_size": vocab_size, "distinct_chars": len(counts),
      "coverage": coverage, "fortunes": len(cookies), "test_fortunes": n_test,
      "train_chars": len(train_text), "test_chars": len(test_text),
      "train": len(train_tokens), "test": len(test_tokens), "summary": summary})
print("fetch_data: " + summary)
EOF
