"""LLVM intrinsics of the matcher kernels (benchbook.analysis.match_kernel): a write prefetch and an unaligned
little-endian 64-bit load. Only the JIT path (and the AOT build) imports this module: it needs numba."""

from __future__ import annotations

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_LITTLE = sys.byteorder == "little"


def _item_pointer(context, builder, sig, args):
    """LLVM pointer to array element args[1] of array args[0] (for the intrinsics below; no bounds check)."""
    aryty = sig.args[0]
    ary = context.make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False, boundscheck=False)


@intrinsic
def prefetch(typingctx, arr, idx):
    """Ask the CPU to bring arr[idx] into cache for writing; changes no value."""
    if not isinstance(arr, types.Array) or not isinstance(idx, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig, args)
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(1), i32(3), i32(1)])  # write, keep in all cache levels, data
        return context.get_dummy_value()

    return types.void(arr, idx), codegen


@intrinsic
def load8(typingctx, data, p):
    """The little-endian 64-bit word at bytes data[p:p+8], at any alignment (the caller checks bounds)."""
    if not isinstance(data, types.Array) or data.dtype != types.uint8 or not isinstance(p, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        ptr = _item_pointer(context, builder, sig, args)
        i64 = ir.IntType(64)
        word = builder.load(builder.bitcast(ptr, i64.as_pointer()), align=1)
        if not _LITTLE:
            word = builder.call(cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(i64, [i64]), "llvm.bswap.i64"), [word])
        return word

    return types.uint64(data, p), codegen
