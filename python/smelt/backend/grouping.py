"""Groups of supported FX nodes with no cycle between them, in linear time,
and each group made one call of a submodule.

Fusing a group into one call is valid when no path leaves the group and
comes back to it: the call would need one of its own outputs. Each supported
node gets a level, the most crossings on any path from it to the end of the
graph, a crossing being a supported node followed by one or more unsupported
ones and then a supported node again. Along any path levels never rise, and
they fall at each crossing, so a path that leaves a level's nodes through an
unsupported node never comes back to that level: each level is one group,
unconnected nodes included (horizontal fusion).

This is where torch.fx's CapabilityBasedPartitioner puts every node too. It
visits nodes in reverse topological order and merges each new node into the
first existing group it can join without a cycle, groups ordered by when they
were created; a node of level k cannot join a lower level (a path from it
crosses into each of them), can always join level k, and the groups of the
levels below k all exist before it (the path that gives it level k visits
them). It finds this with a search of the graph below each merge, which
grows with the square of the graph; one pass over the nodes and their users
finds the same groups in the same order.
"""
from __future__ import annotations

import copy
import operator
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

import torch.fx
from torch.fx._lazy_graph_module import _LazyGraphModule
from torch.fx.passes.tools_common import stable_topological_sort
from torch.fx.passes.utils.fuser_utils import topo_sort

Group = Dict[torch.fx.Node, None]  # an ordered set of nodes, in graph order


@dataclass
class GroupingWork:
    """What propose_groups examined: one per node and one per user edge, in
    every pass. Linear in the graph, whatever its depth."""
    visits: int = 0


def propose_groups(graph: torch.fx.Graph, is_supported: Callable[[torch.fx.Node], bool],
                   work: Optional[GroupingWork] = None) -> List[Group]:
    """The supported nodes of `graph` in groups that can each become one call
    with no cycle between the calls; is_supported is asked once per node, in
    reverse graph order. The groups come in the order torch's partitioner
    lists them, their nodes in graph order, and each getitem of a node whose
    users are all getitems (a tuple) is in that node's group (or none)."""
    work = work if work is not None else GroupingWork()
    supported: Dict[torch.fx.Node, bool] = {}
    # Supported node: its level. Unsupported: the highest level of a
    # supported node it reaches through unsupported nodes only (-1: none).
    level: Dict[torch.fx.Node, int] = {}
    members: Dict[int, List[torch.fx.Node]] = {}  # level -> nodes, reverse graph order
    # Torch numbers its partitions as it creates them, one per supported node
    # in reverse order; a group keeps the number of the larger side of each
    # merge (the newer one while it had one node) and is listed by it. Here
    # the node's place in reverse order stands for the number.
    listed_as: Dict[int, int] = {}
    nodes = list(graph.nodes)
    for place, node in enumerate(reversed(nodes)):
        work.visits += 1
        ok = supported[node] = bool(is_supported(node))
        highest = 0 if ok else -1
        for user in node.users:
            work.visits += 1
            highest = max(highest, level[user] + (ok and not supported[user]))
        level[node] = highest
        if ok:
            group = members.setdefault(highest, [])
            if len(group) <= 1:
                listed_as[highest] = place
            group.append(node)
    groups: Dict[int, Group] = {k: dict.fromkeys(reversed(v)) for k, v in members.items()}
    assignment = {n: k for k, group in groups.items() for n in group}
    _getitems_with_their_tuple(nodes, groups, assignment, work)
    return [groups[k] for k in sorted(groups, key=listed_as.__getitem__) if groups[k]]


def _getitems_with_their_tuple(nodes: List[torch.fx.Node], groups: Dict[int, Group],
                               assignment: Dict[torch.fx.Node, int], work: GroupingWork) -> None:
    """A tuple's getitems go where the tuple goes (to the end of its group),
    or to no group: the tuple is one value. Repeated until nothing moves, for
    getitems of getitems."""
    while True:
        moves: Dict[torch.fx.Node, Optional[int]] = {}
        for node in nodes:
            work.visits += 1
            users = list(node.users)
            work.visits += len(users)
            if all(u.op == "call_function" and u.target is operator.getitem for u in users):
                home = assignment.get(node)
                moves.update((u, home) for u in users if assignment.get(u) != home)
        if not moves:
            return
        for node, home in moves.items():
            old = assignment.pop(node, None)
            if old is not None:
                del groups[old][node]
            if home is not None:
                groups[home][node] = None
                assignment[node] = home


def fuse_groups(gm: torch.fx.GraphModule, groups: List[Group], prefix: str) -> torch.fx.GraphModule:
    """Replaces each group of gm's graph (in place) by a call of a submodule
    named prefix + its index, whose graph computes the group from the values
    it reads (placeholders named as those) and returns those that nodes
    outside read, in the order of its nodes (one value bare, several as a
    tuple the caller takes apart with getitems); returns gm. The graph is
    what torch.fx's fuse_by_partitions makes, without its search of the
    graph below each group for a cycle (propose_groups makes none) and
    with submodules whose Python code is generated when first read or run
    (a fusion's submodule runs only should smelt fail at run time)."""
    place = {node: i for i, node in enumerate(gm.graph.nodes)}
    for index, group in enumerate(groups):
        nodes = topo_sort(list(group))  # along users, as torch orders a partition's nodes
        graph = torch.fx.Graph()
        copies: Dict[torch.fx.Node, torch.fx.Node] = {}
        inputs: Dict[torch.fx.Node, torch.fx.Node] = {}  # value read -> its placeholder

        def read(value: torch.fx.Node) -> torch.fx.Node:
            if value in group:
                return copies[value]
            if value not in inputs:
                inputs[value] = graph.placeholder(value.name, type_expr=value.type)
                inputs[value].meta = copy.copy(value.meta)
            return inputs[value]

        for node in nodes:
            copies[node] = graph.node_copy(node, read)
        outputs = [n for n in nodes if any(u not in group for u in n.users)]
        graph.output(copies[outputs[0]] if len(outputs) == 1 else tuple(copies[n] for n in outputs))
        name = f"{prefix}{index}"
        gm.add_submodule(name, _LazyGraphModule(torch.nn.Module(), graph, class_name=name))
        with gm.graph.inserting_after(max(outputs, key=place.__getitem__)):
            call = gm.graph.call_module(name, tuple(inputs))
        if len(outputs) == 1:
            outputs[0].replace_all_uses_with(call, propagate_meta=True)
        else:
            with gm.graph.inserting_before(call.next):
                for i, out in enumerate(outputs):
                    out.replace_all_uses_with(gm.graph.call_function(operator.getitem, (call, i)),
                                              propagate_meta=True)
            call.meta["val"] = tuple(out.meta.get("val") for out in outputs)
        for node in reversed(nodes):
            gm.graph.erase_node(node)
    stable_topological_sort(gm)
    gm.graph.lint()
    return gm
