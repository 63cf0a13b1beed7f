"""Kernels that torch.compile generated, as operators of the inventory.

Inductor's generated code launches its Triton kernels (GPU) and C++ kernels (CPU) itself, past
the dispatcher, so the observer that records ATen calls never sees them: a compiled model's
inventory held only the calls inductor left to ATen (its matrix products) and called itself
complete. Here each such launch, while a step is observed, is wrapped in a record named
``compiled::<kernel>.<source hash>`` with its arguments as text (``_core.open_compiled_kernel_record``),
which the observer takes as a call of its own.

Layers: a compiled region runs no module hooks. When the model is compiled while opcost runs it
(a ``torch.compile``d model's first call, or the ``compile`` variant), inductor's provenance
tracking names, per launch site of the graph's code, the graph nodes it fuses, and those nodes
carry the module path they came from (``nn_module_stack``); a launch's layer is the path most of
its site's nodes share (the n-th launch of a kernel in a step is its n-th site: a kernel reused
for each block of a model has a site per block). The ATen calls of the graph's code
(``extern_kernels.mm``, ``torch.ops.aten._scaled_dot_product_efficient_attention.default``) get
their site's layer alike. A backward graph's kernels and calls are their forward layer's backward
calls. A model compiled before opcost saw it keeps its kernels on the layer they ran in.

Replays: ``make_replay`` gives the measurement loop a kernel this process compiled, on seeded
random inputs of the signature's geometry (``_core.set_generated_kernel_replayer``, while a
model runs under opcost: ``replays()``).

Everything here reads inductor's internals of torch 2.11 defensively: where one is missing, the
kernels are still listed, without layers, and nothing else changes.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import functools
import hashlib
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch

from . import _core
from ._specs import dtype_code, spec_of, torch_dtype

_NAMESPACE = "compiled::"  # core/inventory/compiled_kernel_name.h's kCompiledKernelNamespace
_CPP_PREFIXES = ("cpp_fused", "cpp_kernel")
_KERNEL_PREFIXES = ("triton_",) + _CPP_PREFIXES
# How a graph's code calls ATen: a template's fallback (``extern_kernels.mm``) or an operator
# inductor does not lower (``torch.ops.aten._scaled_dot_product_efficient_attention.default``).
_ATEN_SITE_PREFIXES = ("extern_kernels.", "torch.ops.")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_]")
_MAX_NAME_CHARS = 120  # a kernel's name in a signature (inductor's run to ~100 for deep fusions)

# (wrapper module's file, kernel name) -> the layer of each of its launch sites in the graph's
# code, in order (a kernel inductor reuses, as for each of a transformer's blocks, has a site per
# block), as paths relative to the compiled module's root ("" its own code; None unknown).
# Filled while opcost's own runs compile (layer_provenance). ATen calls inductor makes are keyed
# by their path in the graph's code in the same way ("extern_kernels.mm",
# "torch.ops.aten._scaled_dot_product_efficient_attention.default").
_SITE_LAYERS: Dict[Tuple[str, str], List[Optional[str]]] = {}

# (op, source hash) as the inventory names a kernel -> ("triton" | "cpp", the kernel), for its
# replays: every kernel a watch has seen in this process.
_KERNELS: Dict[Tuple[str, str], Tuple[str, Any]] = {}
_ARG = re.compile(r"(?:^|\s)arg(\d+)=(\S+)")


def _module_path(stack: Any) -> Optional[str]:
    """The innermost module of an FX node's ``nn_module_stack`` as ``named_modules()`` names it,
    relative to the compiled root: ``L['self'].layers[0].attn`` -> ``layers.0.attn``."""
    if not stack:
        return None
    try:
        path = list(stack.values())[-1][0]
    except Exception:
        return None
    if not isinstance(path, str):
        return None
    path = re.sub(r"^L\[['\"][^'\"]*['\"]\]", "", path)
    path = re.sub(r"\._modules\[['\"]([^'\"]*)['\"]\]", r".\1", path)
    path = re.sub(r"\[['\"]?([^'\"\]]*)['\"]?\]", r".\1", path)
    return path.strip(".")


# Looked up once: every launch of an observed step asks them.
_GET_SEQUENCE_NR = getattr(getattr(torch._C, "_autograd", None), "_get_sequence_nr", None)
_CURRENT_AUTOGRAD_NODE = getattr(torch._C, "_current_autograd_node", None)


def _sequence_nr() -> int:
    """The sequence number autograd gives the next node (-1 where torch does not say)."""
    return _GET_SEQUENCE_NR() if _GET_SEQUENCE_NR is not None else -1


def _wrapper_modules() -> List[Any]:
    """Inductor's loaded wrapper modules (the generated code of each compiled graph)."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except Exception:
        return []
    return [m for m in list(PyCodeCache.modules) if callable(getattr(m, "call", None))]


@contextlib.contextmanager
def layer_provenance() -> Iterator[None]:
    """While opcost runs a model, a graph inductor compiles records which layer each of its
    kernels came from. Inductor's settings are restored on the way out. A user's own
    post-grad pass is left alone (no layers then)."""
    try:
        import torch._inductor.config as config
        import torch._inductor.debug as debug
    except Exception:
        yield
        return
    if config.post_grad_custom_post_pass is not None or not hasattr(debug, "dump_inductor_provenance_info"):
        yield
        return
    # The graph being compiled: node name -> layer, its own and (a node without one) its users'.
    nodes: Dict[str, str] = {}
    inherited: Dict[str, str] = {}

    def post_grad_pass(graph: Any) -> None:
        own, users = _node_layers(graph)
        nodes.clear()
        nodes.update(own)
        inherited.clear()
        inherited.update(users)

    original_dump = debug.dump_inductor_provenance_info

    def dump() -> Dict[str, Any]:
        try:
            _take_kernel_layers(getattr(debug, "_inductor_triton_kernel_to_post_grad_node_info", {}), nodes,
                                inherited)
        except Exception:  # provenance is a nicety: never in the way of compiling the model
            pass
        return original_dump()

    saved_level, saved_pass = config.trace.provenance_tracking_level, config.post_grad_custom_post_pass
    config.trace.provenance_tracking_level = 1
    config.post_grad_custom_post_pass = post_grad_pass
    debug.dump_inductor_provenance_info = dump
    try:
        yield
    finally:
        config.trace.provenance_tracking_level = saved_level
        config.post_grad_custom_post_pass = saved_pass
        debug.dump_inductor_provenance_info = original_dump


# How many hops a node without a module of its own looks through its users for one.
_USER_HOPS = 3


def _node_layers(graph: Any) -> Tuple[Dict[str, str], Dict[str, str]]:
    """Each FX node's layer: the module it was traced in (a backward node: its forward node's),
    or "" for the compiled callable's own code; then, for a node of neither (a graph input, a
    copy made from one), the layer of the nodes that use it, up to ``_USER_HOPS`` away (most of
    them where they differ): a weight copied to channels-last for a convolution is that
    convolution's layer's cost (compiled resnet18 training on the H100 left 14 of its 103
    generated signatures in no layer; the 8 its case file lists are such copies). Returns (own layers, layers taken from users) apart: a kernel
    counts the second only where none of its nodes has a layer of its own."""
    own: Dict[str, str] = {}
    pathless = []
    for node in graph.nodes:
        meta = node.meta
        path = _module_path(meta.get("nn_module_stack") or meta.get("fwd_nn_module_stack"))
        if path is None and (meta.get("source_fn_stack") or meta.get("fwd_source_fn_stack")):
            path = ""  # traced from the compiled callable's own code, in none of its submodules
        if path is None:
            pathless.append(node)
        else:
            own[node.name] = path
    from_users: Dict[str, str] = {}
    for _ in range(_USER_HOPS):  # a hop at a time: a chain of copies takes its nearest module's layer
        found = {}
        for node in pathless:
            if node.name in from_users:
                continue
            users = [own.get(u.name, from_users.get(u.name)) for u in node.users]
            layer = _majority_layer([layer for layer in users if layer is not None])
            if layer is not None:
                found[node.name] = layer
        if not found:
            break
        from_users.update(found)
    return own, from_users


def _majority_layer(layers: List[str]) -> Optional[str]:
    """The layer most of ``layers`` are in (None for none). The callable's own code ("") counts
    only where none is in a submodule: a fused kernel of a block's norm and the top level's add
    is the block's, and so is a weight copy its block's convolution and the top level both use."""
    in_modules = [layer for layer in layers if layer]
    return collections.Counter(in_modules or layers).most_common(1)[0][0] if layers else None


def _take_kernel_layers(kernel_nodes: Dict[str, List[str]], node_layers: Dict[str, str],
                        from_users: Optional[Dict[str, str]] = None) -> None:
    """Called as a graph's compilation ends: its wrapper module is the newest loaded. A kernel's
    layer is its nodes' (``node_layers``); where none has one, their users' (``from_users``)."""
    modules = _wrapper_modules()
    if not modules:
        return
    source = getattr(modules[-1], "__file__", "")
    # The sites this graph's code has.
    own = set(re.findall(r"\[Provenance debug handles\] (\S+)", _module_text(source)))
    sites: Dict[str, List[Tuple[int, Optional[str]]]] = {}
    for key, names in kernel_nodes.items():
        kernel, _, handle = key.rpartition(":")
        # An earlier graph's entries may linger in inductor's dict: only this code's sites count.
        if key not in own or not handle.isdigit() or not kernel.startswith(_KERNEL_PREFIXES + _ATEN_SITE_PREFIXES):
            continue
        layers = ([node_layers[n] for n in names if n in node_layers]
                  or [from_users[n] for n in names if from_users and n in from_users])
        sites.setdefault(kernel, []).append((int(handle), _majority_layer(layers)))
    for kernel, handled in sites.items():  # handles number the launch sites in code order
        _SITE_LAYERS[(source, kernel)] = [layer for _, layer in sorted(handled, key=lambda h: h[0])]


@functools.lru_cache(maxsize=256)
def _module_text(module_file: str) -> str:
    """A wrapper module's code (it never changes once written: its name is its content's hash)."""
    try:
        with open(module_file, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _cpp_source(module_file: str, kernel: str) -> str:
    """A C++ kernel's source, from its wrapper module (``name = async_compile.cpp_pybinding(..., r'''...''')``)."""
    m = re.search(rf"^{re.escape(kernel)} = async_compile\.cpp\w*\((.*?)'''\)", _module_text(module_file), re.S | re.M)
    return m.group(1) if m else ""


def _triton_source(autotuner: Any) -> str:
    """A Triton kernel's source, from its autotuner's JIT function."""
    return getattr(getattr(autotuner, "fn", None), "src", "") or ""


def _op_name(kernel: str) -> str:
    return f"{_NAMESPACE}{_SAFE_NAME.sub('_', kernel)[:_MAX_NAME_CHARS]}"


@functools.lru_cache(maxsize=4096)  # each observed step wraps every kernel again
def _source_hash(text: str, fallback: str) -> str:
    return "h" + hashlib.sha256((text or fallback).encode()).hexdigest()[:12]


def _arg_text(value: Any) -> str:
    if isinstance(value, torch.Tensor) or isinstance(value, (bool, int, float)) or value is None:
        return spec_of(value)
    return "None"  # a launch detail (a stream, a grid function): not part of the signature


def _launch_inputs(args: Tuple[Any, ...]) -> Tuple[List[str], List[int]]:
    """A launch's arguments as text, and its tensors' (address, bytes, argument) triples."""
    texts, touches = [], []
    for i, a in enumerate(args):
        texts.append(_arg_text(a))
        if isinstance(a, torch.Tensor) and a.numel() > 0:
            touches += [a.data_ptr(), a.numel() * a.element_size(), i]
    return texts, touches


def _named_launch(kernel: Callable[..., Any], record: str) -> Callable[..., Any]:
    """``kernel``'s launches, each in a record that carries its name alone (``watch(names_only=True)``).
    A try/finally, not a context manager: these records are timed, so the wrapper adds as little
    host time as it can."""
    def launch(*args: Any) -> Any:
        _core.open_compiled_kernel_record(record)
        try:
            return kernel(*args)
        finally:
            _core.close_compiled_kernel_record()
    return launch


class CompiledKernels:
    """Wraps each generated kernel's launch in a record while on (``watch(True)``); off, every
    launch is inductor's own again. ``layer_of()`` is the innermost layer open where the
    compiled region was entered (from the module hooks), or None when layers are not named."""

    def __init__(self, layer_of: Callable[[], Optional[str]] = lambda: None):
        self._layer_of = layer_of
        self._restore: List[Callable[[], None]] = []
        self._names_only = False  # the mode the launches are wrapped in while on
        self._launches: Dict[Tuple[str, str], int] = {}  # launches of each site list this watch
        # A compiled region's backward node (its sequence number) -> the layer it ran forward in.
        self._outer_of_node: Dict[int, str] = {}

    def _site_layer(self, module_file: str, kernel: str) -> Optional[str]:
        """The layer of this launch: the graph's code launches a kernel's sites in order, each
        time the graph runs, so the n-th launch in a step is site n modulo their count."""
        layers = _SITE_LAYERS.get((module_file, kernel))
        if not layers:
            return None
        n = self._launches.get((module_file, kernel), 0)
        self._launches[(module_file, kernel)] = n + 1
        return layers[n % len(layers)]

    def _open_layer(self, module_file: str, kernel: str) -> int:
        """Opens the launch's layer scopes where layers are named and its layer is known: one per
        module on the path (`layer1`, `layer1.0`, `layer1.0.conv1`), as the modules' own hooks
        would nest them, so that a parent layer's inclusive figures hold its children's
        launches. Returns how many it opened."""
        outer = self._layer_of()
        if outer is None:
            return 0
        relative = self._site_layer(module_file, kernel)  # "": the compiled region's own code
        if relative is None:
            return 0
        # A backward graph's kernels run in autograd's engine, where no module hook is open: their
        # path is relative to the layer their compiled region ran forward in. A region's forward
        # runs inside its autograd Function, whose backward node took the sequence number just
        # before the current one; its backward's node has that number.
        node = _CURRENT_AUTOGRAD_NODE() if _CURRENT_AUTOGRAD_NODE is not None else None
        if node is None:
            # The first region to launch under a number is the one its node numbers: a region that
            # makes no node (under no_grad, frozen) must not take an earlier region's.
            if not torch.is_inference_mode_enabled():
                self._outer_of_node.setdefault(_sequence_nr() - 1, outer)
        else:
            outer = self._outer_of_node.get(node._sequence_nr())
            if outer is None:  # a region whose forward this watch did not see: the node's layer stays
                return 0
        parts = relative.split(".") if relative else []
        if not parts:  # forward: the layer open already; backward: it is named
            scopes = [outer] if node is not None else []
        else:
            scopes = [f"{outer}.{'.'.join(parts[:k])}" if outer else ".".join(parts[:k])
                      for k in range(1, len(parts) + 1)]
        backward = node is not None
        opened = 0
        try:
            for scope in scopes:
                _core.open_layer_scope(scope, backward)
                opened += 1
        except BaseException:
            for _ in range(opened):  # none left open past a failed launch
                _core.close_layer_scope()
            raise
        return opened

    def __call__(self, on: bool, names_only: bool = False) -> None:  # the core's hook (watch_compiled_kernels)
        self.watch(on, names_only)

    def watch(self, on: bool, names_only: bool = False) -> None:
        """Wraps every launch in a record while on. ``names_only``: the record carries the kernel's
        name and nothing else, and no layer is opened (the host-timing steps, whose calls are
        matched by name; core's KernelRecords says why). Turned on in the other mode while on,
        the launches are wrapped again in that one."""
        if on and self._restore and names_only != self._names_only:
            self.remove()
        if on and not self._restore:
            self._names_only = names_only
            self._launches.clear()
            self._outer_of_node.clear()
            self._wrap_cpp_kernels(names_only)
            self._wrap_triton_launches(names_only)
            if not names_only:
                self._wrap_aten_calls()
        elif not on:
            self.remove()

    def remove(self) -> None:
        while self._restore:
            self._restore.pop()()

    @contextlib.contextmanager
    def _launch(self, kernel: str, record: str, module_file: str, args: Tuple[Any, ...]) -> Iterator[None]:
        """One launch inside its records: its layer (where named and known) and the kernel's own
        (``record``: ``compiled::<kernel>.<source hash>``, made once per kernel)."""
        texts, touches = _launch_inputs(args)
        with self._layer(module_file, kernel):
            _core.open_compiled_kernel_record(record, texts, touches)
            try:
                yield
            finally:
                _core.close_compiled_kernel_record()

    @contextlib.contextmanager
    def _layer(self, module_file: str, kernel: str) -> Iterator[None]:
        opened = self._open_layer(module_file, kernel)
        try:
            yield
        finally:
            for _ in range(opened):
                _core.close_layer_scope()

    def _wrap_cpp_kernels(self, names_only: bool) -> None:
        for module in _wrapper_modules():
            module_file = getattr(module, "__file__", "") or ""
            for name, kernel in list(vars(module).items()):
                if not name.startswith(_CPP_PREFIXES) or not callable(kernel):
                    continue
                source_hash = _source_hash(_cpp_source(module_file, name), module_file + name)
                _KERNELS[(_op_name(name), source_hash)] = ("cpp", kernel)
                record = f"{_op_name(name)}.{source_hash}"

                if names_only:
                    wrapped = _named_launch(kernel, record)
                else:
                    def wrapped(*args: Any, _kernel=kernel, _name=name, _record=record, _file=module_file) -> Any:
                        with self._launch(_name, _record, _file, args):
                            return _kernel(*args)

                setattr(module, name, wrapped)
                self._restore.append(lambda m=module, n=name, k=kernel: setattr(m, n, k))

    def _wrap_aten_calls(self) -> None:
        """The ATen calls a graph's code makes (``extern_kernels.mm(...)``, and fallbacks such as
        ``torch.ops.aten._scaled_dot_product_efficient_attention.default(...)``) are the
        observer's own calls already; here they only get their layer, where layers are named.
        The module's global each site is reached through (``extern_kernels``, ``torch``) stands
        in for itself while the step is observed."""
        if self._layer_of() is None:  # a step whose layers are not named: nothing to add
            return
        for module in _wrapper_modules():
            module_file = getattr(module, "__file__", "") or ""
            sites = frozenset(k for f, k in _SITE_LAYERS if f == module_file and not k.startswith(_KERNEL_PREFIXES))
            # Every path a site lies under: "torch", "torch.ops", "torch.ops.aten", ...
            under = frozenset(".".join(site.split(".")[:k]) for site in sites for k in range(1, site.count(".") + 1))
            for root in sorted({site.split(".", 1)[0] for site in sites if "." in site}):
                target = vars(module).get(root)
                if target is None:
                    continue
                setattr(module, root, _LayeredCalls(target, root, sites, under, module_file, self))
                self._restore.append(lambda m=module, r=root, t=target: setattr(m, r, t))

    def _wrap_triton_launches(self, names_only: bool) -> None:
        try:
            from torch._inductor.runtime.triton_heuristics import CachingAutotuner
        except Exception:
            return
        # id(autotuner) -> (kernel name, record name, wrapper module's file)
        kernel_of: Dict[int, Tuple[str, str, str]] = {}

        def name_kernel(autotuner: Any, name: str, module_file: str, fallback: str) -> Tuple[str, str, str]:
            source_hash = _source_hash(_triton_source(autotuner), fallback)
            _KERNELS[(_op_name(name), source_hash)] = ("triton", autotuner)
            kernel_of[id(autotuner)] = (name, f"{_op_name(name)}.{source_hash}", module_file)
            return kernel_of[id(autotuner)]

        for module in _wrapper_modules():
            module_file = getattr(module, "__file__", "") or ""
            for name, kernel in list(vars(module).items()):
                if isinstance(kernel, CachingAutotuner):
                    name_kernel(kernel, name, module_file, module_file + name)
        original_run = CachingAutotuner.run

        def named(autotuner: Any) -> Tuple[str, str, str]:
            found = kernel_of.get(id(autotuner))
            if found is None:  # compiled after the watch began: named by inductor's own metadata, once
                name = (getattr(autotuner, "inductor_meta", None) or {}).get("kernel_name", "triton_kernel")
                found = name_kernel(autotuner, name, "", name)
            return found

        def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
            with self._launch(*named(autotuner), args):
                return original_run(autotuner, *args, **kwargs)

        def run_named(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
            _core.open_compiled_kernel_record(named(autotuner)[1])
            try:
                return original_run(autotuner, *args, **kwargs)
            finally:
                _core.close_compiled_kernel_record()

        if names_only:
            run = run_named

        CachingAutotuner.run = run
        self._restore.append(lambda: setattr(CachingAutotuner, "run", original_run))


class _LayeredCalls:
    """Stands in for a name a graph's code reaches ATen through (``extern_kernels``, ``torch``)
    while a step is observed: a call whose dotted path is a launch site runs inside that site's
    layer; every other attribute is the original's, and calling a stand-in calls its original."""

    def __init__(self, target: Any, path: str, sites: frozenset, under: frozenset, module_file: str,
                 kernels: CompiledKernels):
        self._target, self._path, self._sites, self._under = target, path, sites, under
        self._file, self._kernels = module_file, kernels

    def __getattr__(self, name: str) -> Any:
        # Resolved once per stand-in: the graph's code reaches the same names at every launch.
        value = getattr(self._target, name)
        path = f"{self._path}.{name}"
        if path in self._under or (path in self._sites and callable(value)):
            value = _LayeredCalls(value, path, self._sites, self._under, self._file, self._kernels)
        if callable(value):
            self.__dict__[name] = value
        return value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._path not in self._sites:
            return self._target(*args, **kwargs)
        with self._kernels._layer(self._file, self._path):
            return self._target(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self._target)


def _value(text: str, device: torch.device, generator: torch.Generator) -> Any:
    """An argument of a replay from its text: a tensor of that dtype and geometry with seeded
    random values (integers in [0, 16), or in its :range), or the number."""
    if "[" in text:
        s = _core.tensor_spec(text)
        dtype = torch_dtype(s["dtype"])
        shape, strides = s["shape"], s["strides"]
        t = (torch.empty_strided(shape, strides, dtype=dtype, device=device) if strides
             else torch.empty(shape, dtype=dtype, device=device))
        lo, hi = s["range"] if s["range"] else (None, None)
        if dtype.is_floating_point:
            t.uniform_(lo, hi, generator=generator) if lo is not None else t.normal_(generator=generator)
        elif lo is not None and not dtype == torch.bool:
            t.random_(int(lo), int(hi), generator=generator)
        else:
            # Zeros: a generated kernel checks its indices on the device, and an index past a
            # small table would end the process's CUDA context (a device assert), not one replay.
            t.zero_()
        return t
    if text in ("true", "false"):
        return text == "true"
    if text == "None":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def make_replay(op: str, overload: str, args: str, device: str, cache_mode: str,
                cold_footprint_bytes: int) -> Dict[str, Any]:
    """A replay of one generated kernel for the measurement loop (``_core.set_generated_kernel_replayer``):
    the kernel this process compiled, on seeded random inputs of the signature's geometry; in a
    cold cache mode, as an operator's replay (torch/replay.cpp): copies of the cold inputs that
    together span ``cold_footprint_bytes`` (``_core.cold_input_sets``: 2 to 256 sets, 1 where the cold
    inputs hold no byte), one set per call in turn."""
    found = _KERNELS.get((op, overload))
    if found is None:
        raise LookupError("not among the kernels torch.compile generated in this process (run its model here first)")
    kind, kernel = found
    texts = [text for _, text in sorted(((int(i), t) for i, t in _ARG.findall(args)))]
    if kind == "cpp" or device == "cpu" or not torch.cuda.is_available():
        dev = torch.device("cpu")
    else:
        dev = torch.device("cuda", torch.cuda.current_device()) if device in ("auto", "cuda") else torch.device(device)
    generator = torch.Generator(device=dev).manual_seed(0)
    first = [_value(t, dev, generator) for t in texts]
    tensors = [v for v in first if isinstance(v, torch.Tensor)]
    input_bytes = sum(t.untyped_storage().nbytes() for t in tensors)
    sets = [first]
    if cache_mode.startswith("cold"):
        # "cold": every argument rotates; "cold:arg1,arg3": those the model reads from memory.
        named = cache_mode.partition(":")[2]
        cold = set(range(len(texts)))
        if named:
            cold = set()
            for name in named.split(","):
                if not (name.startswith("arg") and name[3:].isdigit() and int(name[3:]) < len(texts)):
                    raise ValueError(f"cache mode '{cache_mode}': {name!r} is no argument of this kernel; name "
                                     f"them arg0 to arg{len(texts) - 1}, as its signature does")
                cold.add(int(name[3:]))
        cold_bytes = sum(v.untyped_storage().nbytes() for i, v in enumerate(first)
                         if i in cold and isinstance(v, torch.Tensor))
        wanted = _core.cold_input_sets(cold_bytes, cold_footprint_bytes)
        sets += [[_value(t, dev, generator) if i in cold else first[i] for i, t in enumerate(texts)]
                 for _ in range(wanted - 1)]
    if kind == "triton":
        # The stream current at each launch, as inductor's code asks for it: a loop may capture
        # the calls into a CUDA graph on a stream of its own, and a launch onto the stream of
        # the moment the replay was made would run outside the graph (which then replays nothing).
        current_stream, index = torch._C._cuda_getCurrentRawStream, dev.index or 0
        launch = lambda a: kernel.run(*a, stream=current_stream(index))  # noqa: E731
    else:
        launch = lambda a: kernel(*a)  # noqa: E731
    turn = [0]  # the input set of the next call

    def call() -> None:
        args_now = sets[turn[0]]
        turn[0] = (turn[0] + 1) % len(sets)
        launch(args_now)
    dtype = next((dtype_code(t.dtype) for t in tensors if t.is_floating_point()), "")
    return {"call": call, "dtype": dtype, "device_kind": dev.type, "device_index": dev.index or 0,
            "input_bytes": int(input_bytes), "input_sets": len(sets)}


_replay_users = [0]  # how many runs have the maker registered now (compare's variants nest)


@contextlib.contextmanager
def replays() -> Iterator[None]:
    """While a model runs under opcost, its generated kernels can be replayed alone."""
    if _replay_users[0] == 0:
        _core.set_generated_kernel_replayer(make_replay)
    _replay_users[0] += 1
    try:
        yield
    finally:
        _replay_users[0] -= 1
        if _replay_users[0] == 0:
            _core.set_generated_kernel_replayer(None)


# Unregistered before Python shuts down, whatever was left registered (an interrupted run).
atexit.register(lambda: _core.set_generated_kernel_replayer(None))
