"""An independent float64 model of the four tasks, element by element from the raw bits."""
import numpy as np

E2M1 = {c: (-1.0 if c & 8 else 1.0) * ((c & 1) * 0.5 if (c >> 1) & 3 == 0 else (1 + (c & 1) / 2) * 2.0 ** (((c >> 1) & 3) - 1))
        for c in range(16)}


def e4m3(code: int) -> float:
    sign = -1.0 if code & 0x80 else 1.0
    exp, man = (code >> 3) & 0xF, code & 7
    return sign * (man / 8 * 2.0**-6 if exp == 0 else (1 + man / 8) * 2.0 ** (exp - 7))


def operand(packed, scales) -> np.ndarray:
    """[mn, k/2] packed bytes + [mn, k/16] scale bytes (numpy uint8) -> float64 [mn, k]."""
    mn, half = packed.shape
    out = np.zeros((mn, 2 * half))
    for r in range(mn):
        for j in range(half):
            byte = int(packed[r, j])
            for nib, code in enumerate((byte & 15, byte >> 4)):
                kk = 2 * j + nib
                out[r, kk] = E2M1[code] * e4m3(int(scales[r, kk // 16]))
    return out


def gemm64(a, sfa, b, sfb) -> np.ndarray:
    return operand(a, sfa) @ operand(b, sfb).T
