"""Raw array loads and stores for the render kernels' hot loops.

Two costs of Warp's own indexing that the raster pays per band and per walked entry:

- **Scalar accesses.** Warp's ``vec4`` / ``vec4i`` have 4-byte alignment, so an element load or
  store compiles to one scalar instruction per component. The ``*vec4*`` functions here make
  each 16-byte element one vector access on CUDA (``ld.global.nc.v4`` through the read-only
  cache, ``st.global.v4``; the CPU does four scalar ones). That is legal because every array
  they take holds 16-byte elements (`common.EntryRecord`: 64-byte ones read as four words)
  and Warp aligns its allocations to at least 256 bytes, so every element of an array, a
  view or a slice of whole elements starts on a 16-byte boundary.
- **Index arithmetic.** ``a[i]`` wraps a negative index (Python style: three instructions)
  and multiplies by the runtime stride in 64 bits. The 1-D loads here take a contiguous array
  and index it from its data pointer (``a.data + i``): callers pass flattened arrays (the
  raster's lists, masks and ray frames) and never a negative index.

Loads go through the read-only cache (``__ldg``): only for data the calling kernel does not
write (every use here reads what an earlier launch wrote). Values are the same bits either
way. Both are measurable in the raster's speed (docs/benchmarks.md).
"""

from __future__ import annotations

import warp as wp

VECTORS = {"vec4": ("float4", "float"), "vec4i": ("int4", "int")}
"""Warp vector type -> (CUDA vector type, component type) of the snippets below."""


def load_snippet(pointer: str, vec: str) -> str:
    """Body of a `wp.func_native` returning the ``vec`` (a `VECTORS` key) that starts at the
    C++ expression ``pointer`` (16-byte aligned)."""
    native4, scalar = VECTORS[vec]
    return f"""
const {scalar}* p = reinterpret_cast<const {scalar}*>({pointer});
#if defined(__CUDA_ARCH__)
const {native4} q = __ldg(reinterpret_cast<const {native4}*>(p));
return wp::{vec}(q.x, q.y, q.z, q.w);
#else
return wp::{vec}(p[0], p[1], p[2], p[3]);
#endif
"""


def store_snippet(pointer: str, value: str, vec: str) -> str:
    """Body of a `wp.func_native` storing the ``vec`` expression ``value`` at the C++
    expression ``pointer`` (16-byte aligned)."""
    native4, scalar = VECTORS[vec]
    return f"""
{{
{scalar}* p = reinterpret_cast<{scalar}*>({pointer});
const wp::{vec} value4 = {value};
#if defined(__CUDA_ARCH__)
*reinterpret_cast<{native4}*>(p) = make_{native4}(value4.c[0], value4.c[1], value4.c[2], value4.c[3]);
#else
for (int c = 0; c < 4; ++c) p[c] = value4.c[c];
#endif
}}
"""


@wp.func_native(load_snippet("reinterpret_cast<const float*>(a.data) + 4 * (size_t)i", "vec4"))
def load_vec4(a: wp.array(dtype=wp.vec4), i: int) -> wp.vec4:
    """``a[i]`` of the contiguous ``a`` (i >= 0), one vector load."""
    ...


@wp.func_native(load_snippet("reinterpret_cast<const int*>(a.data) + 4 * (size_t)i", "vec4i"))
def load_vec4i(a: wp.array(dtype=wp.vec4i), i: int) -> wp.vec4i:
    """``a[i]`` of the contiguous ``a`` (i >= 0), one vector load."""
    ...


@wp.func_native("""
#if defined(__CUDA_ARCH__)
return __ldg(reinterpret_cast<const unsigned int*>(a.data) + (size_t)i);
#else
return reinterpret_cast<const unsigned int*>(a.data)[i];
#endif
""")
def load_u32(a: wp.array(dtype=wp.uint32), i: int) -> wp.uint32:
    """``a[i]`` of the contiguous ``a`` (i >= 0)."""
    ...


@wp.func_native("""
const float* p = reinterpret_cast<const float*>(a.data) + 3 * (size_t)i;
#if defined(__CUDA_ARCH__)
return wp::vec3(__ldg(p), __ldg(p + 1), __ldg(p + 2));
#else
return wp::vec3(p[0], p[1], p[2]);
#endif
""")
def load_vec3(a: wp.array(dtype=wp.vec3), i: int) -> wp.vec3:
    """``a[i]`` of the contiguous ``a`` (i >= 0): the palettes' colours."""
    ...


@wp.func_native("""
const size_t k = (size_t)(unsigned)i * (size_t)(unsigned)a.shape[1] + (size_t)(unsigned)j;
unsigned char* p = reinterpret_cast<unsigned char*>(a.data) + 3 * k;
p[0] = rgb.c[0];
p[1] = rgb.c[1];
p[2] = rgb.c[2];
""")
def store_rgb(a: wp.array2d(dtype=wp.vec3ub), i: int, j: int, rgb: wp.vec3ub):
    """``a[i, j] = rgb`` of the contiguous ``a`` (i, j >= 0): one 32 x 32 -> 64-bit
    multiply-add for the element, where Warp's strides take two 64-bit products."""
    ...


@wp.func_native(load_snippet("reinterpret_cast<const float*>(ptr) + 4 * (size_t)i", "vec4"))
def load_vec4_at(ptr: wp.uint64, i: int) -> wp.vec4:
    """Element ``i`` (>= 0) of the contiguous vec4 array whose data starts at ``ptr``
    (`wp.array.ptr`), one vector load: a kernel argument of 8 bytes where an array in a struct
    (Warp's descriptor with its shape and strides) took ~90 bytes of the raster's stack."""
    ...


@wp.func_native(store_snippet("reinterpret_cast<float*>(ptr) + 4 * (size_t)i", "value", "vec4"))
def store_vec4_at(ptr: wp.uint64, i: int, value: wp.vec4):
    """Element ``i`` (>= 0) of the contiguous vec4 array at ``ptr`` = ``value`` (`load_vec4_at`)."""
    ...
