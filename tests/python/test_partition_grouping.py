"""Grouping supported nodes into partitions (smelt/backend/grouping.py): no
cycle between the groups, the groups torch.fx's CapabilityBasedPartitioner
forms (the reference for behaviour), and work linear in the graph."""
import copy
import operator
import random

import pytest
import torch
import torch.fx
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupport
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

import smelt.backend
from smelt.backend.grouping import GroupingWork, fuse_groups, propose_groups
from smelt.backend.partition import eliminate_common_subexpressions, group_supported_nodes


class _Listed(OperatorSupport):
    def __init__(self, supported):
        super().__init__()
        self.supported = supported

    def is_node_supported(self, submodules, node):
        return node in self.supported


def torch_partitions(gm, supported):
    partitioner = CapabilityBasedPartitioner(gm, _Listed(supported), allows_single_node_partition=True)
    return [list(p.nodes) for p in partitioner.propose_partitions()]


def contracted_graph_is_acyclic(graph, groups) -> bool:
    """Whether the graph with each group made one node has no cycle."""
    home = {n: ("group", i) for i, g in enumerate(groups) for n in g}
    key = lambda n: home.get(n, n)  # noqa: E731
    edges = {}
    for n in graph.nodes:
        edges.setdefault(key(n), set())
        for u in n.users:
            if key(u) != key(n):
                edges[key(n)].add(key(u))
    indegree = {k: 0 for k in edges}
    for targets in edges.values():
        for t in targets:
            indegree[t] += 1
    ready = [k for k, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        k = ready.pop()
        seen += 1
        for t in edges[k]:
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    return seen == len(edges)


def _tuple_op(x):  # a stand-in op of several outputs, the first a tuple itself
    return (x * 2, x), x + 1


def random_graph(rng: random.Random):
    """A random DAG of elementwise-like nodes, some of them tuples read through
    getitems (and getitems of those), and a random set of supported nodes."""
    graph = torch.fx.Graph()
    values = [graph.placeholder(f"x{i}") for i in range(rng.randint(1, 3))]
    supported = set()
    for _ in range(rng.randint(5, 45)):
        if rng.random() < 0.15:
            node = graph.call_function(_tuple_op, (rng.choice(values),))
            pair, last = (graph.call_function(operator.getitem, (node, i)) for i in range(2))
            first = graph.call_function(operator.getitem, (pair, 0))  # a getitem of a getitem
            made = [node, pair, last, first]
            values += [last, first]
        else:
            args = tuple(rng.choice(values) for _ in range(rng.randint(1, 3)))
            node = graph.call_function(torch.add if len(args) == 2 else torch.relu if
                                       len(args) == 1 else torch.addcmul, args)
            made = [node]
            values.append(node)
        supported.update(n for n in made if rng.random() < 0.7)
    graph.output(tuple(n for n in values if not n.users))
    return torch.fx.GraphModule(torch.nn.Module(), graph), supported


@pytest.mark.parametrize("seed", range(300))
def test_groups_are_torch_partitioners_and_acyclic_on_random_graphs(seed):
    gm, supported = random_graph(random.Random(seed))
    asked = []
    groups = propose_groups(gm.graph, lambda n: asked.append(n) or n in supported)
    assert asked == list(reversed(gm.graph.nodes))  # each node once, from the end
    assert [list(g) for g in groups] == torch_partitions(gm, supported), gm.code
    assert contracted_graph_is_acyclic(gm.graph, groups), gm.code
    placed = [n for g in groups for n in g]
    assert len(placed) == len(set(placed))
    getitems = {n for n in gm.graph.nodes if n.target is operator.getitem}
    assert set(placed) - getitems <= supported


@pytest.mark.parametrize("seed", range(100))
def test_fused_groups_are_torchs_fused_partitions_and_compute_the_same(seed):
    gm, supported = random_graph(random.Random(seed))
    groups = propose_groups(gm.graph, lambda n: n in supported)
    inputs = [torch.randn(3, generator=torch.Generator().manual_seed(seed + i))
              for i in range(sum(n.op == "placeholder" for n in gm.graph.nodes))]
    expected = gm(*inputs)
    reference = copy.deepcopy(gm)
    by_name = {n.name: n for n in reference.graph.nodes}
    fuse_by_partitions(reference, [{by_name[n.name]: None for n in g} for g in groups], prefix="p_")
    fuse_groups(gm, groups, prefix="p_")
    assert gm.code == reference.code
    for index in range(len(groups)):
        assert getattr(gm, f"p_{index}").code == getattr(reference, f"p_{index}").code
    for got, want in zip(gm(*inputs), expected):
        torch.testing.assert_close(got, want)


def test_a_path_through_an_unsupported_node_keeps_its_ends_apart():
    # a -> sort (torch) -> b, and a -> b: a and b in one group would need
    # the sort's output before a group that computes the sort's input.
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(torch.sin, (x,))
    u = graph.call_function(torch.sort, (a,))
    b = graph.call_function(torch.add, (a, u))
    c = graph.call_function(torch.cos, (x,))  # independent: joins the last group
    graph.output((b, c))
    groups = propose_groups(graph, lambda n: n in (a, b, c))
    assert [list(g) for g in groups] == [[b, c], [a]]
    assert contracted_graph_is_acyclic(graph, groups)


@pytest.mark.usefixtures("fresh_dynamo")
def test_a_fusion_split_by_an_op_in_torch_computes_eager_values():
    def fn(x):
        a = torch.sin(x) * 2
        s = torch.sort(a, dim=-1).values  # runs in torch
        return torch.cos(s) + a, x.exp()

    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        actual = torch.compile(fn, backend="smelt")(x)
    for got, want in zip(actual, fn(x)):
        torch.testing.assert_close(got, want)
    report = smelt.backend.last_report()
    assert len(report.partitions) == 2 and report.fallback_runs == 0, str(report)
    assert report.unsupported_ops["sort.default"] == 1, str(report)
    # The exp, on its own, is with the last group (torch's horizontal merge).
    fused = [sorted(p.ops) for p in report.partitions]
    assert sorted(fused) == [["add.Tensor", "cos.default", "exp.default"],
                             ["mul.Tensor", "sin.default"]], str(report)


def test_equal_nodes_are_merged_and_users_kept_in_graph_order():
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    first = graph.call_function(torch.ops.aten.relu.default, (x,))
    again = graph.call_function(torch.ops.aten.relu.default, (x,))
    late = graph.call_function(torch.ops.aten.mul.Tensor, (again, 2))
    early = graph.call_function(torch.ops.aten.mul.Tensor, (first, 2.0))  # 2.0 is not 2
    exp = graph.call_function(torch.ops.aten.exp.default, (first,))
    graph.output((late, early, exp))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    eliminate_common_subexpressions(gm)
    assert [n for n in gm.graph.nodes if n.op == "call_function"] == [first, late, early, exp]
    assert list(first.users) == [late, early, exp]
    x = torch.randn(5)
    gm.recompile()
    for got, want in zip(gm(x), (x.relu() * 2, x.relu() * 2.0, x.relu().exp())):
        torch.testing.assert_close(got, want)


def _gpt2_aten_graph(layers: int) -> torch.fx.GraphModule:
    """The ATen forward graph smelt's backend is given for a tiny GPT-2."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=layers,
                                       n_head=2, bos_token_id=0, eos_token_id=0)).eval()
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = aot_autograd(fw_compiler=keep, decompositions=smelt.backend.DECOMPOSITIONS)
    with torch.no_grad():
        torch.compile(model, backend=backend)(torch.randint(0, 64, (2, 8)))
    torch._dynamo.reset()
    (gm,) = graphs
    return gm


def test_grouping_work_grows_linearly_with_the_layers():
    """Counted work, not time: the grouping examines each node and edge a
    bounded number of times (torch's partitioner searched the graph below
    each merge: its work grew with the square of the layers), and a layer
    equal to an earlier one is not translated again to decide its support."""
    counts = {}
    for layers in (1, 8):
        gm = _gpt2_aten_graph(layers)
        work = GroupingWork()
        support, groups = group_supported_nodes(gm, work)
        nodes = len(gm.graph.nodes)
        edges = sum(len(n.users) for n in gm.graph.nodes)
        counts[layers] = (work.visits, support.translations, nodes, len(groups))
        assert work.visits <= 4 * (nodes + edges), (layers, work.visits, nodes, edges)
        assert contracted_graph_is_acyclic(gm.graph, groups)
    (visits_1, translations_1, nodes_1, groups_1), (visits_8, translations_8, nodes_8, groups_8) = \
        counts[1], counts[8]
    assert nodes_8 > 5 * nodes_1 and groups_8 > groups_1, counts
    assert visits_8 <= 8.5 * visits_1, counts
    assert translations_8 <= translations_1 + 20, counts
