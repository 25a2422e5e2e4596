// Reads Zarr arrays over HTTP with zarrita.js (a client aiozarr did not write) and prints
// what it read as one JSON object on stdout, for tests/cli/test_zarrita.py.
//
//   node zarrita_read.mjs BASE_URL v2:PATH v3:PATH ...
//
// Output: {"PATH": {"shape": [...], "dtype": "...", "data": [...flat, C order...]}, ...}.
// 64-bit integers are printed as strings (JSON numbers cannot hold them exactly).
import * as zarr from "zarrita";

const [base, ...specs] = process.argv.slice(2);
const store = new zarr.FetchStore(base);
const out = {};
for (const spec of specs) {
  const [format, path] = spec.split(":", 2);
  const location = zarr.root(store).resolve(path);
  const open = format === "v2" ? zarr.open.v2 : zarr.open.v3;
  const arr = await open(location, { kind: "array" });
  const chunk = await zarr.get(arr);
  const data = Array.from(chunk.data, (v) => (typeof v === "bigint" ? v.toString() : v));
  out[path] = { shape: chunk.shape, dtype: arr.dtype, data };
}
process.stdout.write(JSON.stringify(out));
