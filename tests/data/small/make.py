"""Writes small y4m pairs (reference, distorted) for the 17-pixel tests."""
import numpy as np, sys
def clip(w, h, bits, frames, seed):
    rng = np.random.default_rng(seed)
    maxv = (1 << bits) - 1
    yy, xx = np.mgrid[0:h, 0:w]
    refs, dists = [], []
    for t in range(frames):
        base = (0.5 + 0.35*np.sin(xx*0.7 + t*0.9) * np.cos(yy*0.5 - t*0.4)
                + 0.1*((xx + 2*t) % 5 == 0))
        y = np.clip(base*maxv + rng.normal(0, maxv*0.04, (h, w)), 0, maxv)
        # distortion: 3x3 box blur + noise + small offset
        p = np.pad(y, 1, mode='edge')
        blur = sum(p[i:i+h, j:j+w] for i in range(3) for j in range(3)) / 9
        d = np.clip(blur + rng.normal(0, maxv*0.02, (h, w)) + maxv*0.01, 0, maxv)
        cw, ch = (w+1)//2, (h+1)//2
        cu = np.full((ch, cw), maxv//2 + 3); cv = np.full((ch, cw), maxv//2 - 5)
        refs.append((np.rint(y), cu, cv)); dists.append((np.rint(d), cu + 1, cv))
    return refs, dists
def write(path, w, h, bits, planes):
    tag = 'C420jpeg XYSCSS=420JPEG' if bits == 8 else 'C420p10 XYSCSS=420P10'
    dt = np.uint8 if bits == 8 else np.dtype('<u2')
    with open(path, 'wb') as f:
        f.write(f'YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 {tag}\n'.encode())
        for fr in planes:
            f.write(b'FRAME\n')
            for pl in fr:
                f.write(np.asarray(pl).astype(dt).tobytes())
for (w, h) in [(17, 17), (17, 18), (40, 17), (16, 16)]:
    for bits in (8, 10):
        r, d = clip(w, h, bits, 6, w*100 + h + bits)
        write(f'small_{w}x{h}_{bits}bit_ref.y4m', w, h, bits, r)
        write(f'small_{w}x{h}_{bits}bit_dist.y4m', w, h, bits, d)
