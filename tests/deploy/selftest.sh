#!/usr/bin/env bash
# Shows that each deploy check can fail: it runs the checks on a scratch copy
# of the repository (deploy/ copied, everything else linked), first as it is
# (they must pass), then with one defect put into one file at a time (the
# named check must fail and say why).
#
#   selftest.sh REPO_ROOT BUILD_DIR PERFCASTD PERFCAST
# The defects are Perl substitutions, single-quoted on purpose.
# shellcheck disable=SC2016
set -uo pipefail
repo=$(cd "$1" && pwd)
build=$2
binaries=("$3" "$4")
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/repo"
for entry in "$repo"/* "$repo"/.dockerignore; do
  [ "$(basename "$entry")" = deploy ] || ln -s "$entry" "$scratch/repo/"
done
copy="$scratch/repo"
# One install for all the systemd checks below.
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null || { echo "selftest: cmake --install failed"; exit 1; }
export PERFCAST_INSTALLED_PREFIX=$scratch/prefix
fresh() { rm -rf "$copy/deploy"; cp -r "$repo/deploy" "$copy/deploy"; }

run_check() {  # run_check NAME: runs that check on the scratch copy
  local d=$copy/deploy
  case $1 in
    k8s) python3 "$here/check_k8s.py" "$d/k8s" ;;
    yamllint) yamllint -s -c "$d/k8s/.yamllint" "$d/k8s" ;;
    k8s_render) python3 "$here/check_k8s.py" "$d/k8s" --render ;;
    docker) python3 "$here/check_dockerfiles.py" "$copy" ;;
    docker_libs) python3 "$here/check_dockerfiles.py" "$copy" --runtime-binaries "${binaries[@]}" ;;
    systemd) bash "$here/check_systemd.sh" "$build" "$d/systemd/perfcastd.service" "$d/systemd/perfcast-agent.timer" ;;
    scripts) bash "$here/check_scripts.sh" "$d" ;;
    agent_loop) bash "$here/agent_loop_test.sh" "$copy" ;;
    campaign) bash "$here/campaign_test.sh" "$copy" ;;
  esac
}

failures=0
checks=(k8s yamllint docker docker_libs systemd scripts agent_loop campaign)
if command -v kubectl >/dev/null; then checks+=(k8s_render); fi
for check in "${checks[@]}"; do
  fresh
  if output=$(run_check "$check" 2>&1); then
    echo "ok: $check passes on the unchanged copy"
  else
    echo "FAIL: $check fails on the unchanged copy:"; echo "$output"; failures=$((failures + 1))
  fi
done

# defect CHECK FILE PERL_SUBSTITUTION EXPECTED_MESSAGE
defect() {
  fresh
  local before
  before=$(cksum <"$copy/deploy/$2")
  perl -0pi -e "$3" "$copy/deploy/$2"
  if [ "$(cksum <"$copy/deploy/$2")" = "$before" ]; then
    echo "FAIL: the defect '$3' changes nothing in $2"; failures=$((failures + 1)); return
  fi
  local output status=0
  output=$(run_check "$1" 2>&1) || status=$?
  if [ "$status" -ne 0 ] && grep -qF -- "$4" <<<"$output"; then
    echo "ok: $1 catches '$3' in $2"
  else
    echo "FAIL: $1 does not catch '$3' in $2 (exit $status; expected '$4'):"; echo "$output"
    failures=$((failures + 1))
  fi
}

defect k8s k8s/base/agent-daemonset.yaml 's/gpu.present: "true"/gpu.present: "false"/' 'nodeSelector'
defect k8s k8s/base/agent-daemonset.yaml 's/ +nvidia.com\/gpu: 1\n//g' 'has no nvidia.com/gpu limit'
defect k8s k8s/base/perfcastd-deployment.yaml 's/(matchLabels:\n\s+app.kubernetes.io\/name: )perfcastd/${1}perfcast-d/' 'does not match the pod template labels'
defect k8s k8s/base/perfcastd-deployment.yaml 's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' 'readOnlyRootFilesystem'
defect k8s k8s/base/perfcastd-deployment.yaml 's/--db=\$\(PERFCAST_DB\)/--db=\$(PERFCAST_DATABASE)/' 'which is not in env'
defect k8s k8s/base/perfcastd-deployment.yaml 's/ +readinessProbe:\n +grpc:\n +port: 50051\n//' 'has no readinessProbe'
defect k8s k8s/base/perfcastd-service.yaml 's/targetPort: grpc/targetPort: gprc/' 'targetPort'
defect k8s k8s/base/config.yaml 's/agent_plan:/agent_plans:/' "wants key 'agent_plan'"
defect k8s k8s/overlays/sqlite/perfcastd-sqlite.yaml 's/replicas: 1/replicas: 2/' 'SQLite has one writer'
defect k8s k8s/overlays/sqlite/perfcastd-sqlite.yaml 's/type: Recreate/type: RollingUpdate/' 'without strategy Recreate'
defect k8s k8s/overlays/postgres/kustomization.yaml 's/- pdb.yaml/- pdbs.yaml/' "'pdbs.yaml' does not exist"
if command -v kubectl >/dev/null; then  # only the rendered overlay shows it
  defect k8s_render k8s/overlays/sqlite/kustomization.yaml 's/\nnamespace: perfcast\n/\n/' 'not in a namespace the kustomization creates'
fi
defect yamllint k8s/base/namespace.yaml 's/\n  name: perfcast\n/\n   name: perfcast\n/' 'error'
defect docker docker/perfcastd.Dockerfile 's/\/build\/server\/perfcastd /\/build\/server\/perfcastd2 /' 'no add_executable(perfcastd2)'
defect docker docker/perfcastd.Dockerfile 's/--target perfcastd perfcast/--target perfcastd perfcast-cli/' "'perfcast-cli'"
defect docker docker/perfcastd.Dockerfile 's/\nUSER 10001:10001//' 'runs as root'
defect docker docker/perfcastd.Dockerfile 's/FROM debian:bookworm-slim/FROM debian/' 'not pinned'
defect docker_libs docker/perfcastd.Dockerfile 's/ libsqlite3-0//' 'runtime stage lacks libsqlite3-0'
defect docker docker/perfcastd.Dockerfile 's/ libxxhash-dev//' 'builder lacks libxxhash-dev'
defect docker docker/perfcastd.Dockerfile 's/ prometheus-cpp-dev/ libprometheus-cpp-dev/' "apt knows no package 'libprometheus-cpp-dev'"
defect docker docker/perfcastd.Dockerfile 's/ENTRYPOINT \["\/usr\/local\/bin\/perfcastd"\]/ENTRYPOINT ["\/usr\/bin\/perfcastd"]/' 'ENTRYPOINT /usr/bin/perfcastd'
defect docker docker/agent.Dockerfile 's/install -D -m 0755 deploy\/agent-loop.sh/install -D -m 0755 deploy\/agent_loop.sh/' "'deploy/agent_loop.sh', which does not exist"
defect docker docker/agent.Dockerfile 's/COPY --from=builder \/opt\/libtorch\/lib/COPY --from=build \/opt\/libtorch\/lib/' 'no earlier stage'
defect systemd systemd/perfcastd.service 's/NoNewPrivileges=/NoNewPrivilege=/' "Unknown key 'NoNewPrivilege'"
defect systemd systemd/perfcastd.service 's/ExecStart=\/usr\/local\/bin\/perfcastd/ExecStart=\/usr\/local\/bin\/perfcast-daemon/' 'is not executable'
defect systemd systemd/perfcast-agent.timer 's/RandomizedDelaySec=6h/RandomizedDelaySec=6 hourz/' 'Failed to parse sec value'
defect scripts agent-loop.sh 's/\ndone\n$/\n/' 'syntax error'
defect scripts slurm/profile-campaign.sbatch 's/mkdir -p "\$RESULTS"/mkdir -p \$RESULTS/' 'SC2086'
defect agent_loop agent-loop.sh 's/grep -q ALREADY_EXISTS/grep -q ALREADY_EXIST_/' 'FAIL: says the node was registered before'
defect agent_loop agent-loop.sh 's/0\) rm -f -- /0) : /' 'FAIL: deletes the pushed file'
defect campaign slurm/profile-campaign.sbatch 's/failed\+=\("\$node"\)/:/' 'FAIL: a failing node fails the job'

echo "selftest: $failures failures"
[ "$failures" -eq 0 ]
