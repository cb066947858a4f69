// validate.mjs MODELS_DIR < objects.json: validates Kubernetes objects against the API schema of
// the npm package kubernetes-models (and @kubernetes-models/prometheus-operator for the
// ServiceMonitor), installed in MODELS_DIR by tools/install-k8s-models.sh. Input: a JSON array of
// {file, object}. Prints one line per object; exits 1 if any is invalid or of a kind it does
// not know. Used by deploy/k8s_manifests_test.py.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: validate.mjs MODELS_DIR < objects.json");
  process.exit(2);
}

// apiVersion -> the module folder of its kinds.
function modulePath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `${dir}/node_modules/@kubernetes-models/prometheus-operator/${apiVersion}/${kind}.js`;
  }
  return `${dir}/node_modules/kubernetes-models/${apiVersion}/${kind}.js`;
}

let failed = 0;
for (const { file, object } of JSON.parse(readFileSync(0, "utf8"))) {
  const what = `${file}: ${object.kind} ${object.metadata?.name}`;
  let Model;
  try {
    Model = (await import(pathToFileURL(modulePath(object.apiVersion, object.kind))))[object.kind];
  } catch (e) {
    console.log(`INVALID ${what}: no schema for ${object.apiVersion} ${object.kind} (${e.code})`);
    failed++;
    continue;
  }
  try {
    new Model(object).validate();
    console.log(`valid ${what} (${object.apiVersion})`);
  } catch (e) {
    console.log(`INVALID ${what}: ${e.message}`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
