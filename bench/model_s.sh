# shellcheck shell=bash
# model_s.sh: sourced by bench/ddp.sh and bench/launch.sh. model_s BIN DIR STEPS writes
# DIR/s.toml, the data-parallel benchmarks' run of gsched-train's model S (6 layers, 384
# channels, context 256, bytes; global batch 16 x 256 tokens, micro-batch 4, one kernel
# thread per rank; STEPS + 2 steps, the first two untimed), over shards of the licence texts
# it builds in DIR/data. Extra TOML for the end of the file may come on stdin.
model_s() {
  "$1/gsched" shard build --out "$2/data" --val-fraction 0.05 /usr/share/common-licenses/* > /dev/null
  cat > "$2/s.toml" << EOF2
threads = 1
[model]
layers = 6
heads = 6
channels = 384
context = 256
[data]
dir = "$2/data"
[batch]
global_tokens = 4096
micro = 4
[optim]
warmup_steps = 0
steps = $(($3 + 2))
[eval]
every = 0
[checkpoint]
every = 0
[metrics]
log_every = 1000
EOF2
  [ -t 0 ] || cat >> "$2/s.toml"
}
