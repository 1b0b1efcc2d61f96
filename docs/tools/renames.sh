#!/usr/bin/env bash
# The renames of docs/tools/renames.md for the `algorithms` crate (and the
# places that use its items in other crates), in order. Run from the
# repository root, after the restructuring branches are merged:
#
#     bash docs/tools/renames.sh            # all steps
#     bash docs/tools/renames.sh R3 R7      # only some steps
#
# Each step finds its files by content (git ls-files + perl), not by fixed
# path, so it still works after files have moved. A step rewrites:
#   * the files of the defining module (DEF);
#   * files that name the item through its module path (`irregular::Trace`,
#     `irregular::switch::Trace`) or import it in a `use` list from that module
#     (also a multi-line one), found by `users`.
# In those files an unqualified word is replaced unless it follows `::` (that
# would be an enum variant of the same name, e.g. `WormKind::Tree`); a
# qualified path is replaced whatever precedes it.
# Follow every step with:  cargo check --workspace --all-targets
set -euo pipefail

rs() { git ls-files -- '*.rs'; }

# users MOD NAME: files that mention MOD::NAME or MOD::sub::NAME, or import
# NAME from MOD (or MOD::sub) in a use list, or through a crate-root re-export
# (ROOT=1: also `mcast_algorithms::NAME` and `use mcast_algorithms::{.., NAME}`).
users() {
    local mod=$1 name=$2 root=${3:-0}
    rs | xargs perl -0777 -ne '
        BEGIN { ($m, $n, $r) = splice(@ARGV, 0, 3) }
        $hit = /\b\Q$m\E::(?:\w+::)?\Q$n\E\b/
            || /use\s+[\w:]*\b\Q$m\E(?:::\w+)?::\{[^;]*\b\Q$n\E\b[^;]*;/;
        $hit ||= $r && (/\bmcast_algorithms::\Q$n\E\b/
            || /use\s+mcast_algorithms::\{[^;]*(?<!::)\b\Q$n\E\b[^;]*;/);
        print "$ARGV\n" if $hit;
    ' "$mod" "$name" "$root"
}

# def DIR NAME: files under DIR that mention NAME.
def() { git ls-files -- "$1" | xargs grep -lw -- "$2" || true; }

# rn OLD NEW FILES...: the word OLD -> NEW (not after "::"), and any
# qualified path ending in ::OLD -> ::NEW when preceded by MODRE (set below).
rn() {
    local old=$1 new=$2; shift 2
    [ $# -eq 0 ] && return 0
    OLD=$old NEW=$new MODRE=${MODRE:-'\w+'} perl -pi -e '
        s/(?<!::)\b\Q$ENV{OLD}\E\b/$ENV{NEW}/g;
        s/\b((?:$ENV{MODRE})::(?:\w+::)?)\Q$ENV{OLD}\E\b/$1$ENV{NEW}/g;
    ' "$@"
}

# step NAME: run only the steps named on the command line (all if none).
SEL="${*:-}"
step() { if [ -z "$SEL" ] || [[ " $SEL " == *" $1 "* ]]; then echo "== $1"; return 0; fi; return 1; }

# R1 unitstep::Discipline -> unitstep::Forwarding (one name with mcast::Forwarding).
if step R1; then
    # A file that imports both gets the model's enum through its module path.
    for f in $(users unitstep Discipline 1); do
        if grep -q 'mcast::Forwarding\|use mcast::{[^}]*Forwarding' "$f"; then
            perl -pi -e 's/\bDiscipline\b/self/ if /^use mcast_algorithms::unitstep::/;
                               s/(?<!::)\bDiscipline::/unitstep::Forwarding::/g' "$f"
        else
            MODRE='unitstep|mcast_algorithms' rn Discipline Forwarding "$f"
        fi
    done
    MODRE='unitstep' rn Discipline Forwarding $(def algorithms/src/unitstep.rs Discipline) algorithms/src/lib.rs
    perl -pi -e 's/\bdiscipline\b/forwarding/g' algorithms/src/unitstep.rs
fi

# R2 trees::Algorithm -> trees::TreeAlgorithm (mcast::Algorithm stays).
if step R2; then
    MODRE='trees|mcast_algorithms' rn Algorithm TreeAlgorithm \
        $(def algorithms/src/trees Algorithm) $(users trees Algorithm 1 | grep -v '^runtime/src/algorithm.rs$' || true)
    # runtime's own enum is also `Algorithm`: only its qualified uses change.
    [ -f runtime/src/algorithm.rs ] && perl -pi -e 's/\btrees::Algorithm\b/trees::TreeAlgorithm/g' runtime/src/algorithm.rs
    perl -pi -e 's/\bAlgorithm\b/TreeAlgorithm/ if /^pub use trees::/' algorithms/src/lib.rs
fi

# R3 mesh::MeshAlgo -> MeshAlgorithm (unique words).
if step R3; then
    files=$(rs | xargs grep -lw 'MeshAlgo\|MeshAlgoParseError' || true)
    [ -n "$files" ] && perl -pi -e 's/\bMeshAlgoParseError\b/MeshAlgorithmParseError/g; s/\bMeshAlgo\b/MeshAlgorithm/g' $files
fi

# R4 plan::Send -> plan::PlanSend; its field responsible_for -> covers.
if step R4; then
    files=$(rs | xargs grep -lw 'responsible_for' || true)
    [ -n "$files" ] && perl -pi -e 's/\bresponsible_for\b/covers/g' $files
    # `Send` is also std::marker::Send: only the definition file, qualified
    # paths and explicit imports of plan::Send change.
    perl -pi -e 's/(?<!::)\bSend\b(?!\s*\+)/PlanSend/g unless m{^\s*//}' algorithms/src/plan.rs
    for f in $(rs); do
        perl -pi -e 's/\bplan::Send\b/plan::PlanSend/g' "$f"
        if grep -q 'use crate::plan::PlanSend;\|use mcast_algorithms::plan::PlanSend;' "$f"; then
            perl -pi -e 's/(?<!::)\bSend\s*\{/PlanSend {/g; s/Vec<Send>/Vec<PlanSend>/g; s/-> Send\b/-> PlanSend/g' "$f"
        fi
    done
fi

# R5 trees::Transmission -> TreeSend, trees::SendRef -> TreeSendRef (unique words).
if step R5; then
    files=$(rs | xargs grep -lw 'Transmission\|SendRef' || true)
    [ -n "$files" ] && perl -pi -e 's/\bTransmission\b/TreeSend/g; s/\bSendRef\b/TreeSendRef/g' $files
fi

# R6 module tree -> chain_tree; Tree -> ChainTree; TreeError -> ChainTreeError.
if step R6; then
    u=$(users tree Tree 1; users tree TreeError 1)
    git mv algorithms/src/tree.rs algorithms/src/chain_tree.rs
    perl -pi -e 's/^pub mod tree;/pub mod chain_tree;/; s/^pub use tree::/pub use chain_tree::/' algorithms/src/lib.rs
    files=$(echo "$u" algorithms/src/chain_tree.rs algorithms/src/lib.rs | tr ' ' '\n' | sed 's#^algorithms/src/tree.rs$#algorithms/src/chain_tree.rs#' | sort -u)
    perl -pi -e 's/\b(crate|mcast_algorithms)::tree::/$1::chain_tree::/g' $(rs)
    MODRE='chain_tree|mcast_algorithms' rn TreeError ChainTreeError $files
    MODRE='chain_tree|mcast_algorithms' rn Tree ChainTree $files
    # PlanError's variant `Tree(#[from] TreeError)` was renamed with its type.
    perl -pi -e 's/\bPlanError::Tree\b/PlanError::ChainTree/g' $(rs)
fi

# R7 topo::SpecError -> TopoSpecError; irregular::SpecError -> IrregularSpecError.
if step R7; then
    MODRE='irregular|generate|super' rn SpecError IrregularSpecError $(def algorithms/src/irregular SpecError) $(users irregular SpecError)
    MODRE='topo|spec|super|mcast_algorithms' rn SpecError TopoSpecError $(def algorithms/src/topo SpecError) algorithms/src/lib.rs $(users topo SpecError 1)
fi

# R8 irregular::RouteError -> UpDownError (the emulator's RouteError stays).
if step R8; then
    MODRE='irregular|updown|super' rn RouteError UpDownError $(def algorithms/src/irregular RouteError) $(users irregular RouteError)
fi

# R9 irregular::{Topology, TopologyBuilder, TopologyError} -> Switch…
if step R9; then
    for n in TopologyBuilder TopologyError Topology; do
        MODRE='irregular|topology|super' rn $n Switch$n $(def algorithms/src/irregular $n) $(users irregular $n)
    done
fi

# R10 min::Decision -> SeDecision; irregular::Decision -> SwitchDecision.
if step R10; then
    MODRE='min|header|super' rn Decision SeDecision $(def algorithms/src/min Decision) $(users min Decision)
    MODRE='irregular|switch|super' rn Decision SwitchDecision $(def algorithms/src/irregular Decision) $(users irregular Decision)
fi

# R11 min::Trace -> MinTrace; irregular::{Trace, TraceOptions} -> Worm…
if step R11; then
    MODRE='min|network|super' rn Trace MinTrace $(def algorithms/src/min Trace) $(users min Trace)
    MODRE='irregular|switch|super' rn TraceOptions WormTraceOptions $(def algorithms/src/irregular TraceOptions) $(users irregular TraceOptions)
    MODRE='irregular|switch|super' rn Trace WormTrace $(def algorithms/src/irregular Trace) $(users irregular Trace)
fi

# R12 irregular::Dir -> UpDownDir (topo::Dir stays).
if step R12; then
    MODRE='irregular|updown|super' rn Dir UpDownDir $(def algorithms/src/irregular Dir) $(users irregular Dir)
fi

# R13 topo::Kind -> TopoKind (runtime's wire::Kind stays).
if step R13; then
    MODRE='topo|super|mcast_algorithms' rn Kind TopoKind $(def algorithms/src/topo Kind) $(users topo Kind) \
        $(git ls-files -- 'algorithms/src/*.rs' 'algorithms/src/**/*.rs' | xargs grep -l 'crate::topo::{[^}]*\bKind\b' || true)
fi

# R14 mesh::CostModel -> MeshCost (the emulator's CostModel stays).
if step R14; then
    MODRE='mesh|metrics|super' rn CostModel MeshCost $(def algorithms/src/mesh CostModel) $(users mesh CostModel)
fi

# R15 irregular::Worm -> FoundWorm, irregular::WormSend -> WormPlanSend.
if step R15; then
    MODRE='irregular|worms|super' rn WormSend WormPlanSend $(def algorithms/src/irregular WormSend) $(users irregular WormSend)
    MODRE='irregular|worms|super' rn Worm FoundWorm $(def algorithms/src/irregular Worm) $(users irregular Worm)
fi

# R16 irregular::Fabric -> SwitchNetwork.
if step R16; then
    MODRE='irregular|switch|super' rn Fabric SwitchNetwork $(def algorithms/src/irregular Fabric) $(users irregular Fabric)
fi

# R17 MinSend::host_delivers -> delivers (unique word).
if step R17; then
    files=$(rs | xargs grep -lw 'host_delivers' || true)
    [ -n "$files" ] && perl -pi -e 's/\bhost_delivers\b/delivers/g' $files
fi

# Imports are no longer sorted and some lines are longer: let rustfmt fix them.
cargo fmt --all
