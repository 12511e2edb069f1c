import numpy as np
import numpy.typing as npt

def equal_blocks(y: npt.NDArray[np.uint8], u: npt.NDArray[np.uint8], v: npt.NDArray[np.uint8],
                 ref_y: npt.NDArray[np.uint8], ref_u: npt.NDArray[np.uint8], ref_v: npt.NDArray[np.uint8],
                 r0: int, r1: int, c0: int, c1: int, dx: int, dy: int, out: npt.NDArray[np.bool_],
                 chroma: bool = ...) -> None: ...
def changed_squares(before: npt.NDArray[np.uint8], now: npt.NDArray[np.uint8], block: int,
                    out: npt.NDArray[np.bool_]) -> None: ...
def carried_lossy(lossy: npt.NDArray[np.bool_], new: npt.NDArray[np.bool_], vectors: npt.NDArray[np.int32],
                  out: npt.NDArray[np.bool_]) -> None: ...
