#!/usr/bin/env bash
# Checks the OpenTofu modules and examples, and that the configuration the
# cell module renders is one celld accepts:
#
#   1. tofu fmt -check, then per module and example: tofu init, validate and
#      test (plan-time tests against mock_provider "kubernetes": no cluster);
#   2. each example's cells rendered with its example.tfvars, and the cell
#      module rendered with every tests/*.tfvars, through `tofu console`;
#      each rendered celld.yaml goes through `celld --check-config`, which
#      refuses what celld would refuse at start, naming the field.
#
# Needs tofu on PATH and a source for the hashicorp/kubernetes provider: the
# public registry, or (in this project's CI) the offline mirror that
# `eval "$(../shared/tools/terraform/install.sh)"` sets up. Go builds celld
# unless CELLD names a celld binary.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v go >/dev/null 2>&1; then
	export PATH="$PATH:/usr/local/go/bin"
fi
export TF_IN_AUTOMATION=1

dirs=(modules/cell modules/global examples/single-cluster examples/multi-cluster)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== tofu fmt -check"
tofu fmt -check -recursive -diff .

for d in "${dirs[@]}"; do
	echo "== $d: init, validate, test"
	(
		cd "$d"
		tofu init -input=false -backend=false -no-color >"$work/init.log" 2>&1 || { cat "$work/init.log"; exit 1; }
		tofu validate -no-color
		tofu test -no-color
	)
done

celld=${CELLD:-}
if [ -z "$celld" ]; then
	celld="$work/celld"
	(cd ../.. && go build -o "$celld" ./cmd/celld)
fi

# console DIR VARFILE EXPR prints the value of EXPR, a string, unquoted.
console() {
	local out
	out=$(cd "$1" && echo "$3" | tofu console -no-color -var-file="$2")
	out=${out#\"}
	echo "${out%\"}"
}

# check NAME YAML_BASE64 decodes a rendered configuration and checks it.
check() {
	local f="$work/$1.yaml"
	echo "$2" | base64 -d >"$f"
	"$celld" --check-config "$f" || { echo "rendered configuration of $1:" >&2; cat "$f" >&2; exit 1; }
}

echo "== rendered cell configurations: celld --check-config"
checked=0
for ex in examples/*/; do
	ex=${ex%/}
	cells=$(console "$ex" example.tfvars 'join(" ", sort(keys(local.cell_configs)))')
	for cell in $cells; do
		yaml=$(console "$ex" example.tfvars "base64encode(local.cell_configs[\"$cell\"])")
		check "$(basename "$ex")-$cell" "$yaml"
		checked=$((checked + 1))
	done
done
for vars in modules/cell/tests/*.tfvars; do
	yaml=$(console modules/cell "$PWD/$vars" 'base64encode(local.config_yaml)')
	check "cell-$(basename "$vars" .tfvars)" "$yaml"
	checked=$((checked + 1))
done
if [ "$checked" -lt 5 ]; then
	echo "check.sh: only $checked configurations rendered, want every example's cells and the module's fixtures" >&2
	exit 1
fi
echo "== ok: ${#dirs[@]} modules and examples tested, $checked rendered configurations accepted by celld"
