/* The body of a P slice of copies (core/h264_slices.py), written in C: every macroblock is P_L0_16x16 of
 * reference 0 without residual or a P_Skip, so the slice is its header, then per coded block a skip run, its
 * mb_type, its vector's difference from the prediction and coded_block_pattern 0, then the last skip run.
 *
 * Why C: the same in numpy took 0.5-0.8 ms a picture (about 40 array calls on a few hundred blocks, four slices
 * a picture), a sixth of a picture of copies (docs/performance.md, "Where the time goes").
 *
 * Predictions are H.264's 8.4.1.1 (P_Skip) and 8.4.1.3 (median) for 16x16 blocks all of reference 0: a neighbour is
 * there when it lies in the picture and in the slice (at or after its first block). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    uint8_t *data;
    Py_ssize_t size;      /* bytes allocated */
    Py_ssize_t bytes;     /* whole bytes written */
    uint64_t pending;     /* bits not yet in `data`, right-aligned */
    int pending_bits;     /* < 8 after each put */
} BitWriter;

static int grow(BitWriter *w, Py_ssize_t more) {
    if (w->bytes + more <= w->size)
        return 0;
    Py_ssize_t size = (w->size + more) * 2;
    uint8_t *data = PyMem_RawRealloc(w->data, (size_t)size); /* the raw allocator: no GIL held here */
    if (data == NULL)
        return -1;
    w->data = data;
    w->size = size;
    return 0;
}

/* Appends the `count` (at most 32) low bits of `value`, most significant first. */
static int put(BitWriter *w, uint32_t value, int count) {
    if (grow(w, 8) < 0)
        return -1;
    w->pending = (w->pending << count) | (count ? (value & (uint32_t)(((uint64_t)1 << count) - 1)) : 0);
    w->pending_bits += count;
    while (w->pending_bits >= 8) {
        w->pending_bits -= 8;
        w->data[w->bytes++] = (uint8_t)(w->pending >> w->pending_bits);
    }
    w->pending &= ((uint64_t)1 << w->pending_bits) - 1;
    return 0;
}

static int bit_length(uint32_t v) {
    return v ? 32 - __builtin_clz(v) : 0;
}

static int put_ue(BitWriter *w, uint32_t value) {
    uint32_t code = value + 1;
    int length = bit_length(code);
    if (put(w, 0, length - 1) < 0)
        return -1;
    return put(w, code, length);
}

static int put_se(BitWriter *w, int32_t value) {
    return put_ue(w, value > 0 ? 2 * (uint32_t)value - 1 : 2 * (uint32_t)(-value));
}

static int32_t median(int32_t a, int32_t b, int32_t c) {
    int32_t lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : (c > hi ? hi : c);
}

typedef struct {
    const int32_t *mv; /* (rows, columns, 2) */
    Py_ssize_t rows, columns, first;
} Field;

/* Whether block (r, c) is there for a block of the slice, and its vector (0 when not). */
static int there(const Field *f, Py_ssize_t r, Py_ssize_t c, int32_t *x, int32_t *y) {
    if (r < 0 || c < 0 || c >= f->columns || r * f->columns + c < f->first) {
        *x = *y = 0;
        return 0;
    }
    const int32_t *v = f->mv + 2 * (r * f->columns + c);
    *x = v[0];
    *y = v[1];
    return 1;
}

/* The predicted vector (mvp) of block (r, c), and P_Skip's vector. */
static void predict(const Field *f, Py_ssize_t r, Py_ssize_t c, int32_t mvp[2], int32_t skip[2]) {
    int32_t ax, ay, bx, by, cx, cy, dx, dy;
    int a_in = there(f, r, c - 1, &ax, &ay), b_in = there(f, r - 1, c, &bx, &by);
    int c_in = there(f, r - 1, c + 1, &cx, &cy), d_in = there(f, r - 1, c - 1, &dx, &dy);
    int still = !a_in || !b_in || (ax == 0 && ay == 0) || (bx == 0 && by == 0); /* 8.4.1.1 */
    if (!c_in) { /* D stands in for a missing C */
        cx = dx;
        cy = dy;
        c_in = d_in;
    }
    if (a_in && !b_in && !c_in) { /* only A: B and C take its place */
        bx = cx = ax;
        by = cy = ay;
        b_in = c_in = 1;
    }
    if (a_in + b_in + c_in == 1) {
        mvp[0] = a_in ? ax : (b_in ? bx : cx);
        mvp[1] = a_in ? ay : (b_in ? by : cy);
    } else {
        mvp[0] = median(ax, bx, cx);
        mvp[1] = median(ay, by, cy);
    }
    skip[0] = still ? 0 : mvp[0];
    skip[1] = still ? 0 : mvp[1];
}

/* The header's `header_bits` low bits (right-aligned in its bytes), the blocks [first, first + total), the stop bit
 * and alignment; -1 when memory ran out. */
static int write_slice(BitWriter *w, const uint8_t *header, Py_ssize_t header_bytes, Py_ssize_t header_bits,
                       const Field *f, Py_ssize_t total) {
    for (Py_ssize_t bit = 8 * header_bytes - header_bits; bit < 8 * header_bytes; bit++) {
        if (put(w, (header[bit / 8] >> (7 - bit % 8)) & 1, 1) < 0)
            return -1;
    }
    uint32_t run = 0;
    for (Py_ssize_t address = f->first; address < f->first + total; address++) {
        Py_ssize_t r = address / f->columns, c = address % f->columns;
        const int32_t *v = f->mv + 2 * address;
        int32_t mvp[2], skip[2];
        predict(f, r, c, mvp, skip);
        if (v[0] == skip[0] && v[1] == skip[1]) {
            run++;
            continue;
        }
        /* mb_skip_run, mb_type P_L0_16x16 (ue 0), mvd x and y, coded_block_pattern 0 (me: codeNum 0) */
        if (put_ue(w, run) < 0 || put(w, 1, 1) < 0 || put_se(w, v[0] - mvp[0]) < 0 || put_se(w, v[1] - mvp[1]) < 0 ||
            put(w, 1, 1) < 0)
            return -1;
        run = 0;
    }
    if (run && put_ue(w, run) < 0)
        return -1;
    return put(w, 1, 1) < 0 || put(w, 0, (8 - w->pending_bits) % 8) < 0 ? -1 : 0; /* the stop bit, alignment */
}

static PyObject *p_slice_rbsp(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer header, vectors;
    Py_ssize_t header_bits, columns, first, total;
    if (!PyArg_ParseTuple(args, "y*ny*nnn", &header, &header_bits, &vectors, &columns, &first, &total))
        return NULL;
    PyObject *result = NULL;
    BitWriter w = {0};
    Py_ssize_t rows = columns > 0 ? vectors.len / (Py_ssize_t)(2 * sizeof(int32_t) * columns) : 0;
    if (columns < 2 || vectors.len != rows * columns * 2 * (Py_ssize_t)sizeof(int32_t) || first < 0 || total <= 0 ||
        first + total > rows * columns || header_bits < 0 || header_bits > 8 * header.len) {
        PyErr_SetString(PyExc_ValueError, "the slice's blocks lie outside its vectors, or its header is short");
        goto done;
    }
    int written;
    Py_BEGIN_ALLOW_THREADS /* the frame's worker thread: other frames and the event loop go on meanwhile */
    Field f = {(const int32_t *)vectors.buf, rows, columns, first};
    written = write_slice(&w, (const uint8_t *)header.buf, header.len, header_bits, &f, total);
    Py_END_ALLOW_THREADS
    if (written < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBytes_FromStringAndSize((const char *)w.data, w.bytes);
done:
    PyMem_RawFree(w.data);
    PyBuffer_Release(&header);
    PyBuffer_Release(&vectors);
    return result;
}

static PyMethodDef methods[] = {
    {"p_slice_rbsp", p_slice_rbsp, METH_VARARGS,
     "p_slice_rbsp(header, header_bits, vectors, columns, first, total) -> bytes\n\n"
     "The RBSP of a P slice of copies: `header` (its `header_bits` low bits), then blocks [first, first + total)\n"
     "of `vectors`, int32 (rows, columns, 2) in quarter pixels, C order, each a P_Skip where its vector is\n"
     "P_Skip's, else P_L0_16x16 with its difference from the prediction; then the stop bit and alignment."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT, .m_name = "_slices", .m_doc = "P slices of copies, in C.", .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__slices(void) {
    return PyModule_Create(&module);
}
