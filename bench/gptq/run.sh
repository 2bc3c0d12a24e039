#!/bin/sh
# GPTQ benchmark: ane/rebuild/quantize (Go) vs the published algorithm in PyTorch on
# the same 4096×4096 inputs; prints the ratio ours/theirs.
# Installs the baseline's packages (Debian python3-torch, OpenBLAS) if
# missing; this is not part of CI. Usage: bench/gptq/run.sh [-n 4096] [-runs 3]
set -eu
cd "$(dirname "$0")/../.."
if ! /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null || ! ldconfig -p | grep -q libopenblas.so.0; then
	apt-get update
	DEBIAN_FRONTEND=noninteractive apt-get install -y python3-torch libopenblas0-pthread
fi
exec go run ./bench/gptq "$@"
