"""Native functions: one record per ``native_functions.yaml`` entry (plus derived variants)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..base.errors import Location, VtgenError, misspelled
from ..base.names import check_identifier, declared_name_problem, identifier_problem, identifier_suggestion
from ..inputs.load import Entry
from .autocast import parse_autocast
from .fields import FieldReader
from .schema import FunctionSchema, OperatorName, SchemaError, SchemaKind

__all__ = ["COMPOSITE_KEYS", "DISPATCH_KEYS", "Dispatch", "NativeFunction", "parse_tags"]

KNOWN_KEYS = (
    "func",
    "variants",
    "dispatch",
    "structured",
    "structured_delegate",
    "structured_inherits",
    "autogen",
    "tags",
    "manual_kernel_registration",
    "manual_cpp_binding",
    "device_check",
    "device_guard",
    "python_module",
    "category_override",
    "cpp_no_default_args",
    "precomputed",
    "ufunc_inner_loop",
    "use_const_ref_for_mutable_tensors",
    "vmap",
    "autocast",
)

VMAP_KINDS = ("none", "elementwise")  # `vmap:` of an entry: how its batching rule is made

DISPATCH_KEYS = frozenset(
    (
        "CPU",
        "SparseCPU",
        "SparseCsrCPU",
        "MkldnnCPU",
        "CUDA",
        "MPS",
        "XPU",
        "SparseXPU",
        "SparseCsrXPU",
        "SparseCUDA",
        "SparseCsrCUDA",
        "SparseMPS",
        "SparseCsrMPS",
        "QuantizedCPU",
        "QuantizedCUDA",
        "CompositeImplicitAutograd",
        "CompositeImplicitAutogradNestedTensor",
        "CompositeExplicitAutograd",
        "CompositeExplicitAutogradNonFunctional",
        "NestedTensorCPU",
        "NestedTensorCUDA",
        "NestedTensorXPU",
        "NestedTensorHPU",
        "Meta",
        "SparseMeta",
        "SparseCsrMeta",
        "QuantizedMeta",
        "NestedTensorMeta",
        "ZeroTensor",
        "MTIA",
        "HPU",
        "XLA",
        "Lazy",
        "MAIA",
        "VE",
        "IPU",
        "PrivateUse1",
        "PrivateUse2",
        "PrivateUse3",
        "SparsePrivateUse1",
        "NestedTensorPrivateUse1",
    )
)
COMPOSITE_KEYS = frozenset(k for k in DISPATCH_KEYS if k.startswith("Composite"))
_DEVICE_CHECKS = ("ExactSame", "NoCheck")
_VARIANTS = ("function", "method")


@dataclass(frozen=True)
class Dispatch:
    """One backend kernel: ``CPU, CUDA: add_out`` gives one Dispatch per key."""

    key: str
    kernel: str
    location: Location | None = field(default=None, compare=False)  # the `dispatch:` line naming it


@dataclass(frozen=True)
class NativeFunction:
    """An operator as declared (or derived, ``generated=True``) in native_functions.yaml."""

    func: FunctionSchema
    location: Location
    namespace: str = "aten"
    variants: frozenset[str] = frozenset({"function"})
    dispatch: tuple[Dispatch, ...] = ()
    structured: bool = False
    structured_delegate: OperatorName | None = None
    structured_inherits: str | None = None
    autogen: tuple[OperatorName, ...] = ()
    tags: frozenset[str] = frozenset()
    manual_kernel_registration: bool = False
    manual_cpp_binding: bool = False
    device_check: str = "ExactSame"
    device_guard: bool = True
    python_module: str | None = None
    category_override: str | None = None
    cpp_no_default_args: frozenset[str] = frozenset()
    precomputed: tuple[str, ...] = ()
    ufunc_inner_loop: tuple[tuple[str, str], ...] = ()
    use_const_ref_for_mutable_tensors: bool = False
    vmap: str = "none"  # "elementwise": a batching rule is generated (the Python autograd module)
    autocast: str | None = None  # the autocast policy (model/autocast.py), None: no Autocast kernel
    generated: bool = False
    abstract_override: bool | None = None  # derived variants inherit their base's answer
    text: str = field(default="", compare=False, repr=False)
    doc: str = field(default="", compare=False, repr=False)  # the comment above the entry (typed Python API)

    @classmethod
    def parse(cls, entry: Entry, valid_tags: frozenset[str], default_namespace: str = "aten") -> NativeFunction:
        """Build from one located YAML entry; every problem is a located error."""
        r = FieldReader(entry.fields, entry.location, KNOWN_KEYS)
        namespace, func = _parse_func(r, default_namespace)
        variants = _parse_variants(r)
        manual_reg = r.flag("manual_kernel_registration", False)
        structured = r.flag("structured", False)
        delegate = r.text("structured_delegate")
        dispatch = _parse_dispatch(r, func, manual_reg, structured or delegate is not None, namespace)
        return cls(
            func=func,
            location=entry.location,
            namespace=namespace,
            variants=variants,
            dispatch=dispatch,
            structured=structured,
            structured_delegate=_op_name(delegate, r, "structured_delegate"),
            structured_inherits=r.text("structured_inherits"),
            autogen=_parse_autogen(r),
            tags=_parse_entry_tags(r, func, namespace, valid_tags),
            manual_kernel_registration=manual_reg,
            manual_cpp_binding=r.flag("manual_cpp_binding", False),
            device_check=_choice(r, "device_check", _DEVICE_CHECKS, "ExactSame"),
            device_guard=r.flag("device_guard", True),
            python_module=r.text("python_module"),
            category_override=r.text("category_override"),
            cpp_no_default_args=frozenset(r.text_list("cpp_no_default_args")),
            precomputed=_flatten_precomputed(r, func),
            ufunc_inner_loop=_parse_ufunc(r),
            use_const_ref_for_mutable_tensors=r.flag("use_const_ref_for_mutable_tensors", False),
            vmap=_choice(r, "vmap", VMAP_KINDS, "none"),
            autocast=parse_autocast(r.text("autocast"), func, r.location("autocast")),
            text=entry.text,
            doc=entry.comment,
        )

    # -- what the rest of the generator asks -------------------------------------------
    @property
    def name(self) -> OperatorName:
        return self.func.name

    @property
    def dispatch_keys(self) -> frozenset[str]:
        return frozenset(d.key for d in self.dispatch)

    @property
    def has_composite_implicit_autograd_kernel(self) -> bool:
        return "CompositeImplicitAutograd" in self.dispatch_keys

    @property
    def has_composite_implicit_autograd_nested_tensor_kernel(self) -> bool:
        return "CompositeImplicitAutogradNestedTensor" in self.dispatch_keys

    @property
    def has_composite_explicit_autograd_kernel(self) -> bool:
        return "CompositeExplicitAutograd" in self.dispatch_keys

    @property
    def has_composite_explicit_autograd_non_functional_kernel(self) -> bool:
        return "CompositeExplicitAutogradNonFunctional" in self.dispatch_keys

    @property
    def is_abstract(self) -> bool:
        """Has a backend kernel of its own (not only a CompositeImplicitAutograd decomposition)."""
        if self.abstract_override is not None:
            return self.abstract_override
        if self.structured_delegate is not None:
            return True
        implicit = {"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"}
        return not (self.dispatch_keys and self.dispatch_keys <= implicit)

    @property
    def cpp_name(self) -> str:
        """The C++ function name: ``add_``, ``sin_out``, ``_foo_functional``."""
        return self.func.cpp_name()

    @property
    def is_view_op(self) -> bool:
        """Returns an alias, is an in-place view, or has a wildcard (``a -> *``) input."""
        inplace_view = "inplace_view" in self.tags and str(self.name) not in ("resize_", "resize_as_")
        return self.func.is_view() or inplace_view or self.func.has_wildcard_alias()

    @property
    def kind(self) -> SchemaKind:
        return self.func.kind()


def _parse_func(r: FieldReader, default_namespace: str) -> tuple[str, FunctionSchema]:
    text = r.required_text("func")
    namespace, sep, rest = text.partition("::")
    if not sep or "(" in namespace:
        namespace, rest = default_namespace, text
    else:
        check_identifier(namespace, "the namespace of 'func'", r.location("func"))
    try:
        return namespace, FunctionSchema.parse(rest)
    except SchemaError as exc:
        # Count the column from the start of 'func', namespace included.
        column = exc.column + len(text) - len(rest)
        message = f"malformed schema: {exc.message.rsplit(' (column', 1)[0]} (column {column})"
        raise VtgenError(message, r.location("func")) from None


def _op_name(text: str | None, r: FieldReader, key: str) -> OperatorName | None:
    if text is None:
        return None
    try:
        return OperatorName.parse(text)
    except SchemaError as exc:
        raise VtgenError(exc.message, r.location(key)) from None


def _choice(r: FieldReader, key: str, allowed: tuple[str, ...], default: str) -> str:
    value = r.text(key, default)
    assert value is not None
    if value not in allowed:
        raise misspelled(f"'{key}' must be one of {', '.join(allowed)}", value, allowed, r.location(key))
    return value


def _parse_variants(r: FieldReader) -> frozenset[str]:
    text = r.text("variants", "function")
    assert text is not None
    names = [v.strip() for v in text.split(",")]
    for v in names:
        if v not in _VARIANTS:
            raise misspelled(f"unknown variant '{v}'", v, _VARIANTS, r.location("variants"))
    return frozenset(names)


def _parse_dispatch(
    r: FieldReader, func: FunctionSchema, manual: bool, structured: bool, namespace: str
) -> tuple[Dispatch, ...]:
    if not r.has("dispatch"):
        # No table: the function is a composite of other ops (unless structured).
        # Its kernel is named after the operator, without the overload (``_out`` for out= ops).
        return () if structured else (Dispatch("CompositeImplicitAutograd", func.cpp_name()),)
    if manual:
        raise VtgenError("'dispatch' has no effect with manual_kernel_registration", r.location("dispatch"))
    result: list[Dispatch] = []
    for f in r.mapping("dispatch"):
        if not isinstance(f.value, str):
            raise VtgenError(f"kernel for '{f.key}' must be a name", f.location)
        for key in (k.strip() for k in f.key.split(",")):
            if key not in DISPATCH_KEYS:
                raise misspelled(f"unknown dispatch key '{key}'", key, DISPATCH_KEYS, f.location)
            result.append(Dispatch(key, _kernel_name(f.value, key, namespace, f.location), f.location))
    composites = {d.key for d in result} & COMPOSITE_KEYS
    if (
        len(composites) > 1
        and composites != {"CompositeExplicitAutograd", "CompositeImplicitAutogradNestedTensor"}
        and composites != {"CompositeImplicitAutograd", "CompositeImplicitAutogradNestedTensor"}
    ):
        raise VtgenError(
            f"at most one composite kernel may be given, found {', '.join(sorted(composites))}", r.location("dispatch")
        )
    return tuple(result)


def _kernel_name(name: str, key: str, namespace: str, where: Location) -> str:
    """A kernel name is a plain C++ identifier, not a keyword (a qualified ``other::f`` is not supported).
    An op library's kernels are declared in ``NativeKernels.h`` in the op's own namespace, where a
    kernel named ``std`` or ``at`` would hide what the declarations after it spell; aten's live in
    PyTorch's ``at::native`` (which has a ``std``)."""
    problem = identifier_problem(name) if namespace == "aten" else declared_name_problem(name)
    if problem is None:
        return name
    if "::" in name and all(identifier_problem(p) is None for p in name.split("::")):
        problem = f"{name!r} is qualified; a kernel is declared in the op's own namespace, so name it plainly"
    suggestion = identifier_suggestion(name)
    hint = f"; did you mean '{suggestion}'?" if suggestion else ""
    raise VtgenError(f"the {key} kernel name: {problem}{hint}", where)


def _parse_autogen(r: FieldReader) -> tuple[OperatorName, ...]:
    text = r.text("autogen", "")
    assert text is not None
    return tuple(o for o in (_op_name(p.strip(), r, "autogen") for p in text.split(",") if p.strip()) if o)


def _parse_entry_tags(r: FieldReader, func: FunctionSchema, namespace: str, valid: frozenset[str]) -> frozenset[str]:
    tags = set(r.text_list("tags"))
    for tag in sorted(tags):
        problem = identifier_problem(tag)  # spelled in RegisterSchema.cpp (at::Tag::<tag>, or a comment)
        if problem is not None:
            raise VtgenError(f"tag: {problem}", r.location("tags"))
        if valid and tag not in valid:
            raise misspelled(f"unknown tag '{tag}'", tag, valid, r.location("tags"))
    implied = {
        "pt2_compliant_tag": namespace == "aten",
        "out": bool(func.arguments.out),
        "inplace": func.name.inplace if namespace == "aten" else _inplace(func),  # aten: as torchgen tags it
    }
    tags.update(t for t, on in implied.items() if on and t in valid)
    return frozenset(tags)


def _inplace(func: FunctionSchema) -> bool:
    """PyTorch's ``inplace`` tag of an op library's op: the op writes its first argument (only).
    ``torch.compile`` functionalizes a tagged op as writing that one argument: a ``-> ()`` op writing
    several tensors must not carry it.  (aten's ops keep torchgen's tags, by name: libtorch registers them.)"""
    written = [a for a in func.arguments.all if a.is_write]
    return func.name.inplace and (bool(func.returns) or written == list(func.arguments.positional[:1]))


def _flatten_precomputed(r: FieldReader, func: FunctionSchema) -> tuple[str, ...]:
    value = r.raw("precomputed")
    if value is None:
        return ()
    if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
        raise VtgenError("'precomputed' must be a list of strings", r.location("precomputed"))
    if not r.flag("structured", False):
        raise VtgenError("'precomputed' requires 'structured: True'", r.location("precomputed"))
    items = tuple(str(v) for v in value)
    iterator = r.text("structured_inherits") == "TensorIteratorBase"
    _check_precomputed_names(items, func, iterator, r.location("precomputed"))
    return items


def _check_precomputed_names(items: tuple[str, ...], func: FunctionSchema, iterator: bool, where: Location) -> None:
    """Each field (``arg -> type name, ...`` or ``type name``) becomes a struct member and an impl parameter:
    a declarable identifier, unique, and no other argument's name (it may reuse the one it replaces)."""
    arguments = {a.name for a in func.arguments.all} | ({"iter"} if iterator else set())
    seen: set[str] = set()
    for item in items:
        replaces, arrow, rest = item.partition("->")
        replaced = replaces.strip() if arrow else None
        for piece in (rest if arrow else item).split(","):
            name = piece.strip().rpartition(" ")[2]
            problem = declared_name_problem(name)
            if problem is None and name in seen:
                problem = f"{name!r} is named twice"
            elif problem is None and name in arguments and name != replaced:
                problem = f"{name!r} is also " + (
                    "the impl's TensorIterator parameter" if name == "iter" else f"an argument of '{func.name}'"
                )
            if problem is not None:
                raise VtgenError(f"precomputed field: {problem}", where)
            seen.add(name)


def _parse_ufunc(r: FieldReader) -> tuple[tuple[str, str], ...]:
    value = r.raw("ufunc_inner_loop")
    if value is None:
        return ()
    if isinstance(value, str):
        return (("Generic", value),)
    return tuple((f.key, str(f.value)) for f in r.mapping("ufunc_inner_loop"))


def parse_tags(entries: tuple[Entry, ...]) -> frozenset[str]:
    """The tag names declared in tags.yaml (entries with ``tag:`` and ``desc:``)."""
    names = set()
    for entry in entries:
        r = FieldReader(entry.fields, entry.location, ("tag", "desc"))
        names.add(r.required_text("tag"))
    return frozenset(names)
