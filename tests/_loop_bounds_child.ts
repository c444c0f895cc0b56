// Child of js_loop_bounds_test.ts: runs the js kernels whose loops count to a shape's sizes until
// V8 optimises them, makes one shape of each kind hold a fraction (so every such shape's fields
// hold boxed doubles from then on), and runs them again. Run with --trace-deopt.
import { matmulJs } from "../kernels/matmul/js.ts";
import { gemvJs } from "../kernels/gemv/js.ts";
import { softmaxJs } from "../kernels/softmax/js.ts";

const matmulShape = (m: number, k: number, n: number) => ({ m, k, n });
const gridShape = (rows: number, cols: number) => ({ rows, cols });
const a = new Float32Array(256).fill(1);
const x = new Float32Array(16).fill(1);
const out = new Float32Array(256);
const runAll = () => {
  for (let i = 0; i < 400; i++) {
    matmulJs.run([a, a], out, matmulShape(16, 16, 16), { loop: "naive" });
    gemvJs.run([a, x], out, gridShape(16, 16), { unroll: 4 });
    softmaxJs.run([a], out, gridShape(16, 16), { recompute: false });
  }
};
runAll();
matmulShape(0.5, 0.5, 0.5);
gridShape(0.5, 0.5);
runAll();
console.log("ran");
