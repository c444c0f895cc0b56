/**
 * Decisions from calibration reports: which backend to run an op on
 * ({@linkcode BackendSelector}), how long it will take ({@linkcode predictTime}), which variant
 * to run ({@linkcode recommendTuning}), where to run each op of a chain given what moving data
 * costs ({@linkcode planGraph}), and how to correct all of it online ({@linkcode AdaptiveSelector}).
 *
 * @example
 * ```ts ignore
 * import { loadReport } from "../reports/load.ts";
 * import { BackendSelector, planGraph } from "./mod.ts";
 * const report = await loadReport("reports/latest.json");
 * const selector = BackendSelector.fromReport(report);
 * console.log(selector.selectForMatmul(512, 512, 512).reason);
 * console.log(planGraph(report, [{ op: "matmul", shape: { m: 512, k: 512, n: 512 } }]).totalMs);
 * ```
 *
 * @module
 */
export * from "./selector.ts";
export * from "./predict.ts";
export * from "./plan_graph.ts";
export * from "./adaptive.ts";
