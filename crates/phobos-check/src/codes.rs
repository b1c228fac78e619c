//! Stable codes of the checker's diagnostics (`E0101`..`E0999` and `E1101`.. for CUDA C++ sources, warnings `W0001`..).
//! docs/diagnostics.md lists the same table; a test keeps the two in sync.

macro_rules! codes {
    ($($(#[doc = $doc:literal])* $name:ident = $code:literal;)*) => {
        $($(#[doc = $doc])* pub const $name: &str = $code;)*
        /// Every checker code with its one-line meaning, in order.
        pub const ALL: &[(&str, &str)] = &[$(($code, concat!($($doc),*))),*];
    };
}

codes! {
    /// A two-value @autotune range whose lower bound is below 1.
    AUTOTUNE_LOW_BOUND = "E0101";
    /// A two-value @autotune range whose upper bound is below its lower bound.
    AUTOTUNE_BOUNDS_ORDER = "E0102";
    /// A name declared twice across the @autotune attributes of a kernel.
    AUTOTUNE_DUP_NAME = "E0104";
    /// A value listed twice in an @autotune list.
    AUTOTUNE_DUP_VALUE = "E0105";
    /// An @autotune value that is not an integer literal.
    AUTOTUNE_NOT_INT = "E0106";
    /// An @autotune entry with an empty list.
    AUTOTUNE_EMPTY = "E0107";
    /// An @autotune name that is also a parameter or type parameter name.
    AUTOTUNE_COLLISION = "E0108";
    /// A pinned or bound point that is outside what the kernel accepts.
    BAD_POINT = "E0109";
    /// The same single-use attribute given twice.
    DUP_ATTR = "E0201";
    /// An attribute argument that must be a compile-time constant is not.
    ATTR_NOT_CONST = "E0202";
    /// @launch threads outside 1..=1024 or not a multiple of 32.
    LAUNCH_THREADS = "E0203";
    /// @launch min_blocks below 1 or max_regs outside 16..=255.
    LAUNCH_BOUNDS = "E0204";
    /// @grid with more than three axes or an axis that is not an integer.
    GRID_ARGS = "E0205";
    /// An attribute expression of the wrong type (@where not bool, @flops not a number).
    ATTR_TYPE = "E0206";
    /// The point violates a @where constraint that is constant at this point.
    WHERE_VIOLATED = "E0207";
    /// @aligned names something that is not a runtime dim.
    ALIGNED_NOT_DIM = "E0208";
    /// @aligned value that is not a constant of at least 1.
    ALIGNED_VALUE = "E0209";
    /// An attribute expression reads something only the kernel body can read.
    ATTR_SCOPE = "E0210";
    /// Two kernels with the same name in one file.
    DUP_KERNEL = "E0301";
    /// Two parameters (or type parameters) with the same name.
    DUP_PARAM = "E0302";
    /// An unknown element type name.
    UNKNOWN_TYPE = "E0303";
    /// A parameter type that is not a tensor or a scalar.
    BAD_PARAM_TYPE = "E0304";
    /// A tensor dim below 1 or above 2147483647, or a tensor rank outside 1..=8.
    BAD_TENSOR_DIM = "E0305";
    /// A dim name that is also a parameter or type parameter name.
    NAME_COLLISION = "E0306";
    /// A type parameter default that is not a concrete element type.
    BAD_TYPE_DEFAULT = "E0307";
    /// A reserved name (`ctx`, `inf`, `true`, `false`, a type name) used as a declaration.
    RESERVED_NAME = "E0308";
    /// A tensor whose static dims hold more bytes than fit in `i64`.
    TENSOR_TOO_LARGE = "E0309";
    /// An unknown name.
    UNKNOWN_NAME = "E0401";
    /// An unknown function.
    UNKNOWN_FN = "E0402";
    /// An unknown `ctx` field or a misused `ctx`.
    BAD_CTX = "E0403";
    /// A name that is not a value (a tensor, a type parameter) used as one.
    NOT_A_VALUE = "E0404";
    /// A `let` or `var` without an initializer.
    MISSING_INIT = "E0405";
    /// `break` or `continue` outside a loop.
    OUTSIDE_LOOP = "E0406";
    /// Operands of different element types.
    TYPE_MISMATCH = "E0501";
    /// An operator or built-in applied to a type it is not defined for.
    BAD_OPERAND = "E0502";
    /// A condition that is not a scalar bool.
    NOT_BOOL = "E0503";
    /// An assigned value whose type differs from the variable's.
    ASSIGN_TYPE = "E0504";
    /// A literal that does not fit its type.
    LIT_RANGE = "E0505";
    /// A built-in called with the wrong number or kind of arguments.
    BAD_ARGS = "E0506";
    /// A value that must be a compile-time constant is not.
    NOT_CONST = "E0507";
    /// A constant expression that cannot be evaluated (division by zero, shift out of range).
    CONST_EVAL = "E0508";
    /// An integer was expected (an index, a range bound, a dim).
    NOT_INT = "E0509";
    /// Shapes that do not broadcast.
    BROADCAST = "E0601";
    /// `dot`/`dot_t` operands whose shapes do not multiply.
    DOT_SHAPE = "E0602";
    /// `dot`/`dot_t` operands of unsupported or different element types.
    DOT_TYPE = "E0603";
    /// A tile of rank other than 1 or 2.
    TILE_RANK = "E0604";
    /// A tile of more than 1 << 20 elements or with an extent below 1.
    TILE_SIZE = "E0605";
    /// A tile dim or slice length that is not a compile-time constant.
    NOT_STATIC = "E0606";
    /// `a : b` whose length `b - a` is not a compile-time constant.
    RANGE_NOT_STATIC = "E0607";
    /// `X[:]` (or an open range) over a runtime dim.
    WHOLE_DIM_RUNTIME = "E0608";
    /// An access with the wrong number of indices.
    INDEX_COUNT = "E0609";
    /// A tile where a scalar is needed, or a scalar where a tile is needed.
    TILE_SCALAR = "E0610";
    /// Indexing something that is not a tensor or a tile.
    NOT_INDEXABLE = "E0611";
    /// A reduction axis out of range.
    BAD_AXIS = "E0612";
    /// A store whose value does not have the shape of the access.
    STORE_SHAPE = "E0613";
    /// A slice of a tile (only tensors can be sliced).
    TILE_SLICE = "E0614";
    /// `reshape` to a shape with a different number of elements.
    RESHAPE_COUNT = "E0615";
    /// A list `[a, b]` anywhere but as the shape of `reshape`.
    LIST_VALUE = "E0616";
    /// An atomic whose first argument is not a tensor access.
    ATOMIC_TARGET = "E0617";
    /// An atomic on an element type it does not support, or with a value of another type.
    ATOMIC_TYPE = "E0618";
    /// An atomic's value used where it has none: inside an expression, or a tile atomic's.
    ATOMIC_VALUE = "E0619";
    /// An unknown or repeated option after the indices of an access, or one on a tile or an atomic.
    ACCESS_OPTION = "E0620";
    /// A `cache =` value that is not one of the eviction hints.
    EVICTION_VALUE = "E0621";
    /// Assignment to a `let`.
    ASSIGN_IMMUTABLE = "E0701";
    /// Assignment to a parameter, a dim or a constant.
    ASSIGN_PARAM = "E0702";
    /// Something that cannot be assigned to.
    BAD_TARGET = "E0703";
    /// A `for` over something other than `range(..)`.
    FOR_RANGE = "E0704";
    /// An unroll factor that is not a constant of at least 1.
    UNROLL = "E0705";
    /// An element of a tile assigned to.
    TILE_ELEM_ASSIGN = "E0706";
    /// A tile statement under per-thread control flow.
    DIVERGENT_TILE = "E0801";
    /// A per-thread scalar used in a tile expression.
    PER_THREAD_IN_TILE = "E0802";
    /// A `ctx.block` axis whose grid extent cannot be inferred.
    GRID_UNKNOWN = "E0901";
    /// Slices that imply different grid extents for one axis.
    GRID_CONFLICT = "E0902";
    /// An attribute comment of a CUDA C++ kernel that is not one of its attributes.
    CU_UNKNOWN_ATTR = "E1101";
    /// A CUDA C++ kernel with attributes but no `@params`, or with two.
    CU_PARAMS = "E1102";
    /// An @autotune name of a CUDA C++ kernel that neither its source nor @launch/@grid uses.
    CU_UNUSED_NAME = "E1103";
    /// `@params` that do not match the C++ parameters of the `__global__` function.
    CU_SIGNATURE = "E1104";
    /// Attribute comments above no `__global__` function whose signature can be read.
    CU_NO_KERNEL = "E1105";
    /// An unknown attribute (ignored).
    UNKNOWN_ATTR = "W0001";
    /// An expression statement whose value is unused.
    UNUSED_VALUE = "W0002";
    /// Points of the space that do not check (the tuner skips them).
    POINTS_FAIL = "W0003";
    /// An @autotune range with equal bounds (`[v, v]`, the one value v: `[v]` says so).
    AUTOTUNE_EQUAL_BOUNDS = "W0004";
    /// An unused @autotune name one typo away from a knob the code generator reads.
    KNOB_NEAR_MISS = "W0005";
}
