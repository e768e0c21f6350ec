"""What ember lacks on purpose (with the reason) and what other issues own.

``ON_PURPOSE[namespace][name] = reason key`` (a key of ``REASONS``); ``OWNED[namespace][name] =
issue number``. A name may be an ``fnmatch`` pattern (``"quantize_*"``); ``"*"`` covers a whole
namespace. ``tests/test_api_coverage.py`` checks that every entry names something torch has.
Anything torch has that is in neither table and not in ember is *missing*: work to do.
"""

from __future__ import annotations

REASONS = {
    "jit": "TorchScript and its IR (script types, graphs, schemas, fork/wait futures): ember "
           "runs programs as Python; `ember.compile` is its compiler",
    "quantization": "quantized dtypes, qschemes, quantize/dequantize and fake-quant kernels: "
                    "ember computes in floating point",
    "sparse": "sparse layouts (COO, CSR, CSC, BSR, BSC) and their kernels: ember tensors are "
              "dense NumPy arrays",
    "nested": "nested (jagged) tensors",
    "kernel libraries": "entry points of torch's kernel libraries (cuDNN, MIOpen, oneDNN/mkldnn, "
                        "FBGEMM) and its build flags: ember has one NumPy (or CuPy) path",
    "aten internals": "ATen entry points below the public API (native_*, batch-norm statistics "
                      "kernels of SyncBatchNorm, fused RNN layers over flat weight lists, "
                      "grid-sampler kernels, functionalization helpers): programs call the "
                      "torch.nn / torch.nn.functional forms, which ember has",
    "symbolic shapes": "symbolic sizes (SymInt, sym_*) of torch.compile's tracer",
    "storage": "storage objects (typed, untyped, legacy): an ember tensor owns a NumPy array; "
               "there is no separate storage to share or resize",
    "dtypes": "dtypes NumPy has no arithmetic for (float8, float4, sub-byte ints, bits) and "
              "uint16/32/64, which torch itself supports only in a few ops (and the functions "
              "whose results have them: hash_tensor, scaled_mm)",
    "devices": "devices other than the CPU and CUDA (XPU, MPS, IPU, XLA, MTIA, MAIA, Vulkan)",
    "streams": "CUDA streams, events, graphs' memory pools and allocator hooks: ember runs every "
               "op to completion, in order",
    "removed": "removed from torch: in torch 2.13 it only raises or warns that it is gone",
    "torch internals": "torch's own plumbing (dispatch keys, __torch_function__ helpers, logging, "
                       "benchmarking, build paths, docstring templates)",
    "first-class dims": "first-class dimensions (functorch.dim)",
    "export": "torch.export / torch.fx program capture into ATen graphs: ember's compiler "
              "records its own IR (ember.compiler)",
    "hub": "torch.hub downloads and runs torch code and weights from the network",
    "library": "registering custom C++/Triton operators with torch's dispatcher",
    "masked": "masked tensors (prototype)",
}

_JIT = "jit"
_INTERNAL = "torch internals"

ON_PURPOSE: dict[str, dict[str, str]] = {
    "torch": {
        # TorchScript
        **dict.fromkeys([
            "AliasDb", "AnyType", "Argument", "ArgumentSpec", "AwaitType", "Block", "BoolType",
            "BufferDict", "CallStack", "Capsule", "ClassType", "Code", "CompilationUnit",
            "CompleteArgumentSpec", "ComplexType", "ConcreteModuleType",
            "ConcreteModuleTypeBuilder", "DeepCopyMemoTable", "DeviceObjType", "DictType",
            "EnumType", "ErrorReport", "ExecutionPlan", "FileCheck", "FloatType",
            "FunctionSchema", "Future", "FutureType", "Gradient", "Graph", "GraphExecutorState",
            "IODescriptor", "InferredType", "IntType", "InterfaceType", "JITException",
            "ListType", "LiteScriptModule", "ModuleDict", "Node", "NoneType", "NumberType",
            "OptionalType", "ParameterDict", "PyObjectType", "RRefType", "Script*",
            "StaticModule", "StreamObjType", "StringType", "TensorType", "TracingState",
            "TupleType", "Type", "UnionType", "Use", "Value", "fork", "wait", "import_ir_module",
            "import_ir_module_from_buffer", "merge_type_from_type_comment", "parse_ir",
            "parse_schema", "parse_type_comment", "unify_type_list", "Tag", "OperatorInfo",
        ], _JIT),
        # quantization
        **dict.fromkeys([
            "quantize_*", "quantized_*", "fake_quantize_*", "q_*", "qint*", "quint*", "qscheme",
            "per_channel_*", "per_tensor_*", "dequantize", "int_repr", "empty_quantized",
            "choose_qparams_optimized", "fused_moving_avg_obs_fake_quant",
        ], "quantization"),
        **dict.fromkeys([
            "sparse_*", "dsmm", "hsmm", "hspmm", "smm", "spmm", "sspaddmm", "saddmm",
            "ccol_indices_copy", "col_indices_copy", "crow_indices_copy", "row_indices_copy",
            "indices_copy", "values_copy", "resize_as_sparse_",
        ], "sparse"),
        "jagged": "nested",
        **dict.fromkeys(["cudnn_*", "miopen_*", "mkldnn_*", "fbgemm_*", "has_lapack",
                         "has_mkl", "has_openmp", "has_spectral", "compiled_with_cxx11_abi"],
                        "kernel libraries"),
        **dict.fromkeys([
            "native_*", "batch_norm_*", "lstm", "gru", "rnn_relu", "rnn_tanh", "lstm_cell",
            "gru_cell", "rnn_relu_cell", "rnn_tanh_cell", "grid_sampler_2d", "grid_sampler_3d",
            "embedding_renorm_", "segment_reduce",
            "slice_inverse", "PRIVATE_OPS", "embedding_bag",
        ], "aten internals"),
        **dict.fromkeys(["Sym*", "sym_*"], "symbolic shapes"),
        **dict.fromkeys(["*Storage", "StorageBase", "TypedStorage", "UntypedStorage",
                         "is_storage", "as_strided_", "resize_as_"], "storage"),
        "hash_tensor": "dtypes",
        **dict.fromkeys(["float8_*", "float4_*", "int1", "int2", "int3", "int4", "int5", "int6",
                         "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
                         "uint16", "uint32", "uint64", "bit", "bits*"], "dtypes"),
        **dict.fromkeys(["is_vulkan_available", "get_autocast_ipu_dtype", "get_autocast_xla_dtype",
                         "is_autocast_ipu_enabled", "is_autocast_xla_enabled",
                         "set_autocast_ipu_dtype", "set_autocast_ipu_enabled",
                         "set_autocast_xla_dtype", "set_autocast_xla_enabled"], "devices"),
        **dict.fromkeys(["Stream", "Event"], "streams"),
        **dict.fromkeys(["eig", "lstsq", "matrix_rank", "solve", "symeig"], "removed"),
        **dict.fromkeys([
            "AggregationType", "AVG", "SUM", "LoggerBase", "LockingLogger", "NoopLogger",
            "BenchmarkConfig", "BenchmarkExecutionStats", "ThroughputBenchmark", "DispatchKey",
            "DispatchKeySet", "ExcludeDispatchKeyGuard", "DisableTorchFunction",
            "DisableTorchFunctionSubclass", "PyTorchFileReader", "PyTorchFileWriter",
            "SerializationStorageContext", "DeserializationStorageContext", "classproperty",
            "get_file_path", "prepare_multiprocessing_environment",
            "profiler_allow_cudagraph_cupti_lazy_reinit_cuda12", "USE_GLOBAL_DEPS",
            "USE_RTLD_GLOBAL_WITH_LIBTORCH", "init_num_threads", "get_device_module",
            "thread_safe_generator",
            "FatalError",
        ], _INTERNAL),
        "set_flush_denormal": "kernel libraries",
    },
    "torch.Tensor": {
        **dict.fromkeys(["dequantize", "int_repr", "q_*", "qscheme"], "quantization"),
        **dict.fromkeys([
            "ccol_indices", "col_indices", "crow_indices", "row_indices", "indices", "values",
            "coalesce", "is_coalesced", "dense_dim", "sparse_dim", "sparse_mask",
            "sparse_resize_", "sparse_resize_and_clear_", "to_sparse*", "to_dense", "smm",
            "sspaddmm", "resize_as_sparse_",
        ], "sparse"),
        "to_padded_tensor": "nested",
        "to_mkldnn": "kernel libraries",
        **dict.fromkeys(["ipu", "xpu", "mtia"], "devices"),
        **dict.fromkeys(["storage", "storage_type", "untyped_storage", "set_", "is_set_to",
                         "resize", "resize_", "resize_as", "resize_as_", "as_strided_"],
                        "storage"),
        "record_stream": "streams",
        **dict.fromkeys(["eig", "lstsq", "solve", "symeig", "reinforce", "volatile"],
                        "removed"),
        "index": "first-class dims",
        "slice_inverse": "aten internals",
        "hash_tensor": "dtypes",
    },
    "torch.nn": {
        "factory_kwargs": _INTERNAL,
        "Container": "removed",
    },
    "torch.nn.functional": {
        **dict.fromkeys(["BroadcastingList*", "boolean_dispatch"], _JIT),
        **dict.fromkeys(["has_torch_function*", "assert_int_or_pair", "*_notes"], _INTERNAL),
        "native_channel_shuffle": "aten internals",
        **dict.fromkeys(["scaled_mm", "scaled_grouped_mm", "ScalingType", "SwizzleType"],
                        "dtypes"),
    },
    "torch.utils.data": {
        **dict.fromkeys(["*DataPipe", "DataChunk", "functional_datapipe",
                         "guaranteed_datapipes_determinism", "non_deterministic",
                         "argument_validation", "runtime_validation",
                         "runtime_validation_disabled"], "removed"),
    },
    # SparseAdam steps only on sparse gradients (nn.Embedding(sparse=True)), a sparse layout
    "torch.optim": {"SparseAdam": "sparse"},
    "torch.autograd": {"variable": "removed", "NestedIOFunction": "removed"},
    "torch.autograd.graph": {**dict.fromkeys(["set_override_stale_capture_stream",
                                              "set_warn_on_accumulate_grad_stream_mismatch"],
                                             "streams")},
    "torch.linalg": {"common_notes": _INTERNAL},
    "torch.cuda": {
        **dict.fromkeys(["*Storage"], "storage"),
        **dict.fromkeys(["Stream", "ExternalStream", "StreamContext", "stream", "Event",
                         "current_stream", "default_stream", "set_stream",
                         "get_stream_from_external", "MemPool", "use_mem_pool",
                         "CUDAPluggableAllocator", "change_current_allocator",
                         "caching_allocator_*", "get_allocator_backend", "GreenContext"],
                        "streams"),
        **dict.fromkeys(["cudart", "cudaStatus", "current_blas_handle", "current_solver_handle",
                         "get_gencode_flags", "has_magma", "check_error", "CudaError"],
                        "kernel libraries"),
    },
    "torch.backends.cuda": {
        **dict.fromkeys(["cuFFT*", "cufft_plan_cache", "cuBLASModule", "*_workspace_size",
                         "preferred_blas_library", "preferred_linalg_library",
                         "preferred_rocm_fa_library", "is_ck_sdpa_available", "SDPAParams",
                         "can_use_*"], "kernel libraries"),
    },
    "torch.nn.attention": {"*flash_attention_impl*": "kernel libraries"},
    "torch.cpu": {**dict.fromkeys(["Stream", "StreamContext", "Event", "stream",
                                   "current_stream"], "streams"),
                  "get_capabilities": "kernel libraries"},
    "torch.backends.cudnn": {"*": "kernel libraries"},
    "torch.backends.mps": {"*": "devices"},
    "torch.mps": {"*": "devices"},
    "torch.xpu": {"*": "devices"},
    "torch.jit": {"*": _JIT},
    "torch.export": {"*": "export"},
    "torch.fx": {"*": "export"},
    "torch.sparse": {"*": "sparse"},
    "torch.nested": {"*": "nested"},
    "torch.masked": {"*": "masked"},
    "torch.quantization": {"*": "quantization"},
    "torch.library": {"*": "library"},
    "torch.overrides": {"*": _INTERNAL},
    "torch.hub": {"*": "hub"},
    "torch.serialization": {
        **dict.fromkeys(["StorageType", "normalize_storage_type", "storage_to_tensor_type",
                         "location_tag", "default_restore_location", "register_package",
                         "validate_hpu_device", "mkdtemp", "check_module_version_*"],
                        _INTERNAL),
    },
    "torch.testing": {"assert_allclose": "removed"},
    "torch.random": {"thread_safe_generator": _INTERNAL},
}

# Names other issues build (issue numbers as in the project's tracker).
OWNED: dict[str, dict[str, int]] = {
    "torch": {
        **dict.fromkeys(["complex*", "chalf", "view_as_complex*", "view_as_real*",
                         "conj_physical*", "to_dlpack", "ctc_loss"], 17),
        **dict.fromkeys(["GradScaler", "set_autocast_cpu_*", "set_autocast_gpu_dtype"], 12),
        **dict.fromkeys(["cond", "while_loop"], 13),
        "vmap": 15,
    },
    "torch.Tensor": {
        **dict.fromkeys(["chalf", "conj_physical*"], 17),
    },
    "torch.nn": {
        "DataParallel": 14,
    },
    "torch.nn.functional": {"fractional_max_pool*": 17},
    "torch.nn.parallel": {"*": 14},
    "torch.autograd.profiler": {"*": 17},
    "torch.linalg": {**dict.fromkeys(["eig", "eigvals"], 17)},  # complex results
    "torch.distributions": {"*": 17},
    "torch.distributed": {"*": 14},
    "torch.cuda": {**dict.fromkeys(["CUDAGraph", "graph", "graph_pool_handle",
                                    "make_graphed_callables", "is_current_stream_capturing"],
                                   13)},
    "torch.compiler": {"*": 13},
    "torch.onnx": {"*": 17},
    "torch.profiler": {"*": 17},
}
