/* Per-block loops, in C: which squares of a BGRX picture changed (media/diff.py); which macroblocks of a 4:2:0
 * picture equal the reference moved by a shift, and which show lossy pixels after a picture of copies
 * (media/motion.py).
 *
 * Why C: both run on every picture of moving content, over hundreds of blocks. In numpy each was a dozen calls
 * (compare, a map of every pixel or pixel pair, an averaging resize or a reduction, a mask per plane), and the
 * moved-block check most of the search's time on a box moving across the page (docs/performance.md, "Where the
 * time goes"). Here a block stops at its first difference, and no map of pixels is written. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A plane as the buffer protocol gives it: rows of bytes, each `stride` apart. */
typedef struct {
    Py_buffer view;
    const uint8_t *data;
    Py_ssize_t height, width, stride;
} Plane;

static int plane_of(PyObject *object, Plane *plane, const char *name) {
    if (PyObject_GetBuffer(object, &plane->view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    Py_buffer *v = &plane->view;
    if (v->ndim != 2 || v->itemsize != 1 || v->strides[1] != 1 || v->strides[0] < v->shape[1]) {
        PyErr_Format(PyExc_ValueError, "%s must be a 2-d array of bytes with rows of adjacent bytes", name);
        PyBuffer_Release(v);
        return -1;
    }
    plane->data = v->buf;
    plane->height = v->shape[0];
    plane->width = v->shape[1];
    plane->stride = v->strides[0];
    return 0;
}

/* Whether `size` rows of `size` bytes at (x, y) of `now` equal those at (x - dx, y - dy) of `before`. */
static int same_square(const Plane *now, const Plane *before, Py_ssize_t x, Py_ssize_t y, Py_ssize_t dx,
                       Py_ssize_t dy, Py_ssize_t size) {
    const uint8_t *a = now->data + y * now->stride + x;
    const uint8_t *b = before->data + (y - dy) * before->stride + (x - dx);
    for (Py_ssize_t row = 0; row < size; row++, a += now->stride, b += before->stride) {
        if (memcmp(a, b, (size_t)size) != 0)
            return 0;
    }
    return 1;
}

static Py_ssize_t floor_div(Py_ssize_t a, Py_ssize_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Whether the 8x8 chroma block at (x, y) of `now` is what a decoder predicts for it from `before` when the luma
 * moves by (dx, dy). An even shift moves chroma by whole samples: a copy. An odd one is a chroma vector of half a
 * sample that way, and 8.4.2.2.2 weighs the samples around by eighths: with fractions of 0 or 4, that is the
 * rounded mean of the two samples either side ((A + B + 1) >> 1), or of all four ((A + B + C + D + 2) >> 2). */
static int same_chroma(const Plane *now, const Plane *before, Py_ssize_t x, Py_ssize_t y, Py_ssize_t dx,
                       Py_ssize_t dy) {
    if (!(dx & 1) && !(dy & 1))
        return same_square(now, before, x, y, dx / 2, dy / 2, 8);
    /* The chroma vector in eighths is minus the shift in quarter luma samples, -4 * dx: its whole part is
     * floor(-dx / 2), its fraction 4 when dx is odd. */
    const Py_ssize_t across = dx & 1 ? 1 : 0, down = dy & 1 ? before->stride : 0;
    const uint8_t *a = now->data + y * now->stride + x;
    const uint8_t *b = before->data + (y + floor_div(-dy, 2)) * before->stride + (x + floor_div(-dx, 2));
    for (int row = 0; row < 8; row++, a += now->stride, b += before->stride) {
        uint8_t predicted[8];
        if (across && down) {
            for (int i = 0; i < 8; i++)
                predicted[i] = (uint8_t)((b[i] + b[i + 1] + b[i + down] + b[i + down + 1] + 2) >> 2);
        } else {
            const Py_ssize_t other = across + down; /* the sample beside or below */
            for (int i = 0; i < 8; i++)
                predicted[i] = (uint8_t)((b[i] + b[i + other] + 1) >> 1);
        }
        if (memcmp(predicted, a, 8) != 0)
            return 0;
    }
    return 1;
}

static PyObject *equal_blocks(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *objects[6], *out_object;
    Py_ssize_t r0, r1, c0, c1, dx, dy;
    int chroma = 1;
    if (!PyArg_ParseTuple(args, "OOOOOOnnnnnnO|p", &objects[0], &objects[1], &objects[2], &objects[3], &objects[4],
                          &objects[5], &r0, &r1, &c0, &c1, &dx, &dy, &out_object, &chroma))
        return NULL;
    static const char *names[6] = {"current luma", "current U", "current V", "reference luma", "reference U",
                                   "reference V"};
    Plane planes[6];
    Py_buffer out = {0};
    int taken = 0, ok = 0;
    for (; taken < 6; taken++) {
        if (plane_of(objects[taken], &planes[taken], names[taken]) < 0)
            goto done;
    }
    if (PyObject_GetBuffer(out_object, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    Py_ssize_t height = planes[0].height, width = planes[0].width;
    int shapes_ok = planes[3].height == height && planes[3].width == width;
    for (int i = 1; i < 6; i++) {
        if (i != 3)
            shapes_ok &= planes[i].height == height / 2 && planes[i].width == width / 2;
    }
    if (!shapes_ok || height % 16 || width % 16 || r0 < 0 || c0 < 0 || r1 < r0 || c1 < c0 ||
        r1 > height / 16 || c1 > width / 16 || out.len != (r1 - r0) * (c1 - c0)) {
        PyErr_SetString(PyExc_ValueError, "planes of a 4:2:0 picture of whole macroblocks and a map of the blocks "
                                          "asked for");
        goto done;
    }
    uint8_t *map = out.buf;
    memset(map, 0, (size_t)out.len);
    /* Blocks whose source lies inside the picture. */
    Py_ssize_t top = r0 > -floor_div(-dy, 16) ? r0 : -floor_div(-dy, 16);
    Py_ssize_t bottom = r1 < floor_div(height + dy, 16) ? r1 : floor_div(height + dy, 16);
    Py_ssize_t left = c0 > -floor_div(-dx, 16) ? c0 : -floor_div(-dx, 16);
    Py_ssize_t right = c1 < floor_div(width + dx, 16) ? c1 : floor_div(width + dx, 16);
    Py_BEGIN_ALLOW_THREADS /* the frame's worker thread: other frames and the event loop go on meanwhile */
    for (Py_ssize_t r = top; r < bottom; r++) {
        for (Py_ssize_t c = left; c < right; c++) {
            map[(r - r0) * (c1 - c0) + (c - c0)] =
                same_square(&planes[0], &planes[3], c * 16, r * 16, dx, dy, 16) &&
                (!chroma || (same_chroma(&planes[1], &planes[4], c * 8, r * 8, dx, dy) &&
                             same_chroma(&planes[2], &planes[5], c * 8, r * 8, dx, dy)));
        }
    }
    Py_END_ALLOW_THREADS
    ok = 1;
done:
    for (int i = 0; i < taken; i++)
        PyBuffer_Release(&planes[i].view);
    if (out.obj != NULL)
        PyBuffer_Release(&out);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* Releases the buffers taken (those with an owner); then None, or NULL when the call failed (its error is set). */
static PyObject *finish(int ok, Py_buffer *views, int count) {
    for (int i = 0; i < count; i++) {
        if (views[i].obj != NULL)
            PyBuffer_Release(&views[i]);
    }
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* A region of a BGRX picture: rows of 4-byte pixels. */
static int pixels_of(PyObject *object, Py_buffer *view, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    if (view->ndim != 3 || view->itemsize != 1 || view->shape[2] != 4 || view->strides[2] != 1 ||
        view->strides[1] != 4 || view->strides[0] < 4 * view->shape[1]) {
        PyErr_Format(PyExc_ValueError, "%s must be (rows, columns, 4) bytes with adjacent pixels", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Whether n bytes differ: 8 at a time without a branch (a square's row is 64 bytes), then the rest. */
static int differs(const uint8_t *a, const uint8_t *b, size_t n) {
    uint64_t any = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        any |= x ^ y;
    }
    for (; i < n; i++)
        any |= (uint64_t)(a[i] ^ b[i]);
    return any != 0;
}

static PyObject *changed_squares(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *before_object, *now_object, *out_object;
    Py_ssize_t block;
    if (!PyArg_ParseTuple(args, "OOnO", &before_object, &now_object, &block, &out_object))
        return NULL;
    Py_buffer views[3] = {{0}};
    Py_buffer *before = &views[0], *now = &views[1], *out = &views[2];
    int ok = 0;
    if (pixels_of(before_object, before, "the picture before") < 0 || pixels_of(now_object, now, "the picture") < 0 ||
        PyObject_GetBuffer(out_object, out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    Py_ssize_t height = now->shape[0], width = now->shape[1];
    Py_ssize_t rows = block > 0 ? (height + block - 1) / block : 0;
    Py_ssize_t columns = block > 0 ? (width + block - 1) / block : 0;
    if (block <= 0 || before->shape[0] != height || before->shape[1] != width || out->len != rows * columns) {
        PyErr_SetString(PyExc_ValueError, "two regions of one shape, a positive square size and a map of its squares");
        goto done;
    }
    uint8_t *map = out->buf;
    memset(map, 0, (size_t)out->len);
    /* Row by row (memory in order), each square's part of the row compared until the square is known changed. */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t y = 0; y < height; y++) {
        uint8_t *changed = map + (y / block) * columns;
        const uint8_t *a = (const uint8_t *)before->buf + y * before->strides[0];
        const uint8_t *b = (const uint8_t *)now->buf + y * now->strides[0];
        for (Py_ssize_t c = 0; c < columns; c++) {
            if (changed[c])
                continue;
            Py_ssize_t x = c * block, n = (x + block <= width ? block : width - x) * 4;
            changed[c] = (uint8_t)differs(a + 4 * x, b + 4 * x, (size_t)n);
        }
    }
    Py_END_ALLOW_THREADS
    ok = 1;
done:
    return finish(ok, views, 3);
}

static PyObject *carried_lossy(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *lossy_object, *new_object, *vectors_object, *out_object;
    if (!PyArg_ParseTuple(args, "OOOO", &lossy_object, &new_object, &vectors_object, &out_object))
        return NULL;
    Py_buffer views[4] = {{0}};
    Py_buffer *lossy = &views[0], *new_ = &views[1], *vectors = &views[2], *out = &views[3];
    int ok = 0;
    if (PyObject_GetBuffer(lossy_object, lossy, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(new_object, new_, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(vectors_object, vectors, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(out_object, out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    if (lossy->ndim != 2 || lossy->itemsize != 1 || new_->ndim != 2 || new_->itemsize != 1 || out->ndim != 2 ||
        out->itemsize != 1 || vectors->ndim != 3 || vectors->itemsize != 4 || vectors->shape[2] != 2 ||
        new_->shape[0] != lossy->shape[0] || new_->shape[1] != lossy->shape[1] ||
        out->shape[0] != lossy->shape[0] || out->shape[1] != lossy->shape[1] ||
        vectors->shape[0] != lossy->shape[0] || vectors->shape[1] != lossy->shape[1]) {
        PyErr_SetString(PyExc_ValueError, "maps of one shape (rows, columns) of bytes and int32 vectors "
                                          "(rows, columns, 2)");
        goto done;
    }
    Py_ssize_t rows = lossy->shape[0], columns = lossy->shape[1];
    const uint8_t *was = lossy->buf, *fresh = new_->buf;
    const int32_t *v = vectors->buf;
    uint8_t *after = out->buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t c = 0; c < columns; c++) {
            Py_ssize_t i = r * columns + c;
            int32_t dx = v[2 * i], dy = v[2 * i + 1];
            if (dx == 0 && dy == 0) {
                after[i] = was[i] || fresh[i];
                continue;
            }
            /* The blocks the copy reads: the one holding its source's top left corner, and the next ones down and
             * right when the source is not on the grid (clamped: the search never lets a source leave the picture). */
            Py_ssize_t y = r * 16 - dy, x = c * 16 - dx;
            Py_ssize_t top = floor_div(y, 16), left = floor_div(x, 16);
            Py_ssize_t bottom = top + (y - top * 16 > 0), right = left + (x - left * 16 > 0);
            top = top < 0 ? 0 : (top >= rows ? rows - 1 : top);
            left = left < 0 ? 0 : (left >= columns ? columns - 1 : left);
            bottom = bottom >= rows ? rows - 1 : (bottom < 0 ? 0 : bottom);
            right = right >= columns ? columns - 1 : (right < 0 ? 0 : right);
            after[i] = was[top * columns + left] || was[top * columns + right] || was[bottom * columns + left] ||
                       was[bottom * columns + right];
        }
    }
    Py_END_ALLOW_THREADS
    ok = 1;
done:
    return finish(ok, views, 4);
}

static PyMethodDef methods[] = {
    {"equal_blocks", equal_blocks, METH_VARARGS,
     "equal_blocks(y, u, v, ref_y, ref_u, ref_v, r0, r1, c0, c1, dx, dy, out, chroma=True) -> None\n\n"
     "Sets out[r - r0, c - c0] (bytes, C order, (r1 - r0) x (c1 - c0)) to whether macroblock (r, c) of the\n"
     "picture (Y, U, V of 4:2:0, whole macroblocks) is what a decoder copies from the reference moved by (dx, dy)\n"
     "pixels: the reference's block at (16c - dx, 16r - dy), and its chroma at half that (averaged across half a\n"
     "sample when odd); 0 where that lies outside. With chroma false, the luma alone is compared."},
    {"changed_squares", changed_squares, METH_VARARGS,
     "changed_squares(before, now, block, out) -> None\n\n"
     "Sets out[r, c] (bytes, C order, ceil(rows / block) x ceil(columns / block)) to whether any pixel of the\n"
     "`block`-pixel square (r, c) differs between two (rows, columns, 4) regions of one shape (squares at the\n"
     "right and bottom edges may be partial)."},
    {"carried_lossy", carried_lossy, METH_VARARGS,
     "carried_lossy(lossy, new, vectors, out) -> None\n\n"
     "Sets out (rows x columns bytes) to which blocks show lossy pixels after a picture of copies whose vectors\n"
     "(int32, rows x columns x 2, pixels; 0 for a block not moved) and new blocks are given, when `lossy` did\n"
     "before: a moved block if any block its source overlaps did, another block if it was lossy or is new."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT, .m_name = "_blocks", .m_doc = "Per-block loops of pictures of copies, in C.",
    .m_size = -1, .m_methods = methods,
};

PyMODINIT_FUNC PyInit__blocks(void) {
    return PyModule_Create(&module);
}
