# Shared by the validation scripts that run on the GPU machine (sourced, not run):
#   source "$(dirname "$0")/gpu_common.sh"
# gpu_env BIN_DIR: inferlab finds the bundle's shared libraries (validation/make_gpu_bundle.sh)
# and the repository's data and tokenizers (run from the repository's root).
gpu_env() {
  export LD_LIBRARY_PATH=$1:${LD_LIBRARY_PATH:-}
  export INFERLAB_DATA_DIR=$PWD/data INFERLAB_TOKENIZERS_DIR=$PWD/third_party/tokenizers
}

# wait_for_line PATTERN FILE PID SECONDS: returns once FILE holds PATTERN (0), or when process PID
# has exited or SECONDS have passed (1); a server's start-up line, polled every half second.
wait_for_line() {
  local tries=$(($4 * 2))
  for _ in $(seq "$tries"); do
    grep -q "$1" "$2" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.5
  done
  return 1
}
