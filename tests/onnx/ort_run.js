// ort_run.js — run an ONNX model in onnxruntime (the npm package
// onnxruntime-node, CPU) over the images of a raw IDX file and write the
// outputs as JSON. tests/onnx/check_onnx.py runs it.
//
//   ORT_DIR=build/onnxrt/node_modules node ort_run.js MODEL.onnx IMAGES.idx MEAN STD OUT.json
//
// The images are scaled as the model's metadata says (pixels / 255, then
// (x - mean) / std; one channel); the batch dimension is symbolic, so the
// whole file goes in one run. Writes {"output": name, "dims": [...],
// "data": [...]} and exits non-zero on any failure.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [model, images, mean, std, out] = process.argv.slice(2);
  const dir = path.resolve(process.env.ORT_DIR || 'node_modules');
  const ort = require(path.join(dir, 'onnxruntime-node'));
  const raw = fs.readFileSync(images);
  const ndim = raw[3];
  const dims = [];
  for (let i = 0; i < ndim; i++) dims.push(raw.readUInt32BE(4 + 4 * i));
  const px = raw.subarray(4 + 4 * ndim);
  const x = new Float32Array(px.length);
  for (let i = 0; i < px.length; i++) x[i] = (px[i] / 255 - Number(mean)) / Number(std);
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'] });
  const input = new ort.Tensor('float32', x, [dims[0], 1, dims[1], dims[2]]);
  const result = await session.run({ [session.inputNames[0]]: input });
  const name = session.outputNames[0];
  const y = result[name];
  fs.writeFileSync(out, JSON.stringify({ output: name, dims: y.dims, data: Array.from(y.data),
                                         backend: 'onnxruntime-node ' + require(path.join(dir, 'onnxruntime-node/package.json')).version }));
}

main().catch((err) => { console.error(String(err && err.stack || err)); process.exit(1); });
