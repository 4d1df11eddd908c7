// Browser check of a failing store (run by scripts/e2e.sh after temporal-ui.mjs): the store's
// merges fail (its fragment writes are refused while $STRATA_E2E_FAIL_WHILE exists) until the
// retries are exhausted; the check finds the store in the Temporal UI's workflow list by the
// StrataFailing search attribute, removes the cause, retries through the UI (the workflow's
// More Actions > Send a Signal, named "retry"), and waits until the merge has succeeded and the
// flag is cleared — before the store's cooldown would have retried on its own.
import { unlinkSync } from 'node:fs';
import { deadline, listWorkflows, openBrowser, searchAttribute, sleep, ui } from './browser.mjs';

const store = process.env.STRATA_E2E_FAILING_STORE;
const failWhile = process.env.STRATA_E2E_FAIL_WHILE;
const workflowId = `store/rollout/${store}`;
const failingQuery = `WorkflowId="${workflowId}" AND StrataFailing=true`;
const cooldown = 30_000; // the first cooldown after a failure

// 1. Wait (through the UI server's API) until the merge has exhausted its retries (~75 s).
let flaggedAt = 0;
let flagged = null;
for (const end = deadline(240); Date.now() < end; await sleep(1000)) {
  [flagged] = await listWorkflows(failingQuery).catch(() => []);
  if (flagged) { flaggedAt = Date.now(); break; }
}
if (!flaggedAt) throw new Error(`${workflowId} was not flagged StrataFailing within 240 s`);
const lastError = searchAttribute(flagged, 'StrataLastError');
if (!String(lastError).startsWith(`ObjectStoreUnavailable: merge_wal rollout/${store}: permission denied`)) throw new Error(`StrataLastError is ${lastError}`);
console.log(`temporal-ui-retry: ${workflowId} is flagged failing: ${lastError}`);

const { browser, page, shot } = await openBrowser('retry-');
try {
  // 2. The workflow list, filtered by the search attribute, shows the store.
  await page.goto(`${ui}/namespaces/default/workflows?query=${encodeURIComponent('StrataFailing=true')}`);
  const link = page.getByRole('link', { name: workflowId }).first();
  await link.waitFor({ timeout: 30000 });
  await shot('failing-workflows');
  await link.click();
  await page.getByText(workflowId).first().waitFor();
  await shot('failing-workflow');

  // 3. The cause is removed; the retry is sent through the UI.
  unlinkSync(failWhile);
  await page.getByRole('button', { name: 'More Actions' }).first().click();
  await page.locator('[data-testid=signal-button]:visible').first().click();
  const dialog = page.locator('dialog[open][data-testid=signal-confirmation-modal]');
  await dialog.waitFor();
  // Once the UI has asked the running worker for the workflow's declared signals it offers them
  // in a select (with their descriptions); until then, or without a worker, a text box.
  const select = dialog.locator('[data-testid=signal-select-button]');
  if (await select.waitFor({ timeout: 10000 }).then(() => true, () => false)) {
    await select.click();
    await dialog.getByRole('option', { name: /^retry/ }).first().click();
  } else {
    await dialog.locator('input[data-testid=signal-name]').fill('retry');
  }
  await shot('send-retry-signal');
  await dialog.locator('[data-testid=confirm-modal-button]').click();
  console.log('temporal-ui-retry: sent the retry signal through the UI');

  // 4. The merge runs now and succeeds: the flag clears before the cooldown was over.
  let cleared = false;
  for (const end = deadline(60); !cleared && Date.now() < end; await sleep(500)) {
    cleared = (await listWorkflows(`WorkflowId="${workflowId}" AND StrataFailing=false`).catch(() => [])).length > 0;
  }
  if (!cleared) throw new Error(`${workflowId} is still flagged failing 60 s after the retry`);
  const took = Date.now() - flaggedAt;
  if (took >= cooldown) throw new Error(`the flag cleared ${took} ms after it was set: the cooldown, not the signal, retried`);
  await page.reload();
  await page.getByText(workflowId).first().waitFor();
  await shot('recovered-workflow');
  console.log(`temporal-ui-retry: the merge succeeded after the UI retry (${took} ms after the flag was seen)`);
} catch (err) {
  await shot('failure').catch(() => {});
  throw err;
} finally {
  await browser.close();
}
