// Browser check of the Strata UI (/ui/): find a store by its name, browse its rows with a
// filter, open a record, download its blob, run an SQL query and see its rows, trigger a merge
// and see it reflected in the store's state. Screenshots: $STRATA_E2E_OUT/strata-ui-NN-*.png.
//
//   env: STRATA_E2E_API (the Strata server), STRATA_E2E_UI_STORE (a rollout store with rows
//        r1..r40 of rollout_id e2e-a or e2e-b, and r-blob with a binary payload, not merged)
import { readFile } from 'node:fs/promises';
import { openBrowser, deadline, sleep } from './browser.mjs';

const api = process.env.STRATA_E2E_API;
const store = process.env.STRATA_E2E_UI_STORE;
const { browser, page, shot } = await openBrowser('strata-ui-');
const fail = async (msg) => {
  await shot('failure');
  console.error(`strata-ui.mjs: ${msg}`);
  await browser.close();
  process.exit(1);
};
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

try {
  // The stores page, searched by the store's name.
  await page.goto(`${api}/ui/`);
  await page.fill('input[name=prefix]', store);
  await page.selectOption('select[name=kind]', 'rollout');
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  const link = page.locator(`#stores a[href="/ui/s/rollout/${store}"]`);
  if (await link.count() !== 1) await fail(`the store ${store} is not listed`);
  await shot('stores');

  // The store page, then its records with a filter.
  await Promise.all([page.waitForNavigation(), link.click()]);
  if (!(await page.textContent('h1')).includes(store)) await fail('the store page is not shown');
  await shot('store');
  await Promise.all([page.waitForNavigation(), page.click('text=Browse records')]);
  await page.fill('input[name=filter]', "rollout_id = 'e2e-b'");
  await Promise.all([page.waitForNavigation(), page.click('button[type=submit]')]);
  const rows = await page.locator('#records tbody tr').count();
  if (rows !== 20) await fail(`the filter shows ${rows} rows, not 20`);
  const cells = await page.locator('#records tbody').textContent();
  if (cells.includes('e2e-a')) await fail('the filter shows a row it excludes');
  await shot('records-filtered');

  // One record, and a blob download.
  await page.goto(`${api}/ui/s/rollout/${store}/record?id=r-blob`);
  const json = await page.textContent('#record-json');
  if (!json.includes('"rollout_id": "e2e-blob"')) await fail(`the record's JSON is not shown: ${json}`);
  await shot('record');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('a.download')]);
  const bytes = await readFile(await download.path());
  if (bytes.toString() !== 'blob bytes from e2e') await fail(`the blob downloaded is ${JSON.stringify(bytes.toString())}`);

  // The SQL console: a query and its rows.
  await page.goto(`${api}/ui/s/rollout/${store}/sql`);
  await page.fill('textarea[name=sql]', 'SELECT rollout_id, count(*) AS n FROM t GROUP BY rollout_id ORDER BY rollout_id');
  await page.click('form button[type=submit]');
  await page.waitForSelector('#sql-rows tbody tr', { timeout: 60_000 });
  const result = (await page.locator('#sql-rows tbody').innerText()).replace(/\s+/g, ' ').trim();
  if (result !== 'e2e-a 20 e2e-b 20 e2e-blob 1') await fail(`the query answered "${result}"`);
  await shot('sql');

  // A merge from the store page, reflected in its state.
  await page.goto(`${api}/ui/s/rollout/${store}`);
  const before = (await page.textContent('#pending')).trim();
  if (before === '0') await fail('the store shows nothing pending before the merge');
  await page.click('text=Merge WAL now');
  await page.waitForSelector('#action .notice', { timeout: 120_000 }).catch(async () => fail(`the merge did not finish: ${await page.textContent('#action')}`));
  const until = deadline(60);
  for (;;) {
    await page.goto(`${api}/ui/s/rollout/${store}`);
    const pending = (await page.textContent('#pending')).trim();
    const merged = (await page.textContent('#last-merge')).trim();
    if (pending === '0' && merged !== 'never') break;
    if (Date.now() > until) await fail(`after the merge the page shows ${pending} pending, last merge ${merged}`);
    await sleep(1000);
  }
  await shot('merged');
  if (errors.length) await fail(`the pages logged errors: ${errors.join('; ')}`);
} catch (e) {
  await fail(e.stack || String(e));
}
await browser.close();
console.log('strata-ui.mjs: the Strata UI check passed');
