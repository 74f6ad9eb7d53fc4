// Connections and statements: a node-postgres Pool from a DSN, and the one query() every module
// sends through, which turns the SQL API's refusals into the client's errors (errors.js).
//
// DSN: a URI (postgresql://user@host:5432/db?application_name=x, a Unix socket directory as
// ?host=/run/postgresql) or libpq's key=value form (host=127.0.0.1 port=5432 dbname=app user=app),
// as TASKFORGE_DSN is written for the Python tools. A password may also come from PGPASSWORD.
//
// Types: bigint (int8) columns, such as task_id, come back as JS numbers when they are safe
// integers (always, for ids below 2^53) and as BigInt otherwise; jsonb as decoded values;
// timestamptz as Date (database time). The parsers are set per pool, never on pg's globals.

import pg from 'pg';
import { toClientError } from './errors.js';

const INT8_OID = 20;

const TYPES = {
  getTypeParser(oid, format) {
    if (oid === INT8_OID && format !== 'binary') {
      return (text) => {
        const n = Number(text);
        return Number.isSafeInteger(n) ? n : BigInt(text);
      };
    }
    return pg.types.getTypeParser(oid, format);
  },
};

// libpq keywords node-postgres understands, by their node-postgres names.
const KEYWORDS = {
  host: 'host',
  hostaddr: 'host',
  port: 'port',
  dbname: 'database',
  user: 'user',
  password: 'password',
  application_name: 'application_name',
  options: 'options',
};

/** libpq's key=value connection string as a node-postgres config (unknown keys are ignored). */
export function parseKeywordDsn(dsn) {
  const config = {};
  const pair = /\s*([A-Za-z_]+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))/y;
  let at = 0;
  while (at < dsn.trimEnd().length) {
    pair.lastIndex = at;
    const match = pair.exec(dsn);
    if (match === null) {
      throw new Error(`dsn: cannot read it as key=value pairs from ${JSON.stringify(dsn.slice(at, at + 40))}`);
    }
    at = pair.lastIndex;
    const [, key, quoted, plain] = match;
    const value = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : plain;
    if (key in KEYWORDS) config[KEYWORDS[key]] = value;
    else if (key === 'connect_timeout') config.connectionTimeoutMillis = Number(value) * 1000;
    else if (key === 'sslmode') config.ssl = /^(require|verify-ca|verify-full)$/.test(value);
  }
  if (config.port !== undefined) config.port = Number(config.port);
  return config;
}

/** The DSN given, else $TASKFORGE_DSN, else $DATABASE_URL. */
export function resolveDsn(dsn) {
  const found = dsn || process.env.TASKFORGE_DSN || process.env.DATABASE_URL;
  if (!found) throw new Error('dsn: give a DSN (--dsn, or set TASKFORGE_DSN or DATABASE_URL)');
  return found;
}

/**
 * The node-postgres config of the DSN. options: applicationName, statementTimeoutMs and
 * lockTimeoutMs (session settings sent at connect; 0 or undefined = the server's default).
 */
export function connectionConfig(dsn, options = {}) {
  const text = resolveDsn(dsn);
  const base = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? { connectionString: text } : parseKeywordDsn(text);
  return {
    ...base,
    application_name: base.application_name ?? options.applicationName,
    statement_timeout: options.statementTimeoutMs ? Math.max(1, Math.round(options.statementTimeoutMs)) : undefined,
    lock_timeout: options.lockTimeoutMs ? Math.max(1, Math.round(options.lockTimeoutMs)) : undefined,
    connectionTimeoutMillis: base.connectionTimeoutMillis ?? 10_000,
    types: TYPES,
  };
}

/**
 * A node-postgres Pool for the DSN: connectionConfig's options, and max (connections, default
 * 10) and onError(err) for errors of idle connections (default: ignored; the next query opens
 * a new connection).
 */
export function createPool(dsn, options = {}) {
  const pool = new pg.Pool({ ...connectionConfig(dsn, options), max: options.max ?? 10 });
  pool.on('error', options.onError ?? (() => {}));
  return pool;
}

/** One unpooled connection (not yet connected) for the DSN, e.g. to LISTEN on. */
export function createClient(dsn, options = {}) {
  return new pg.Client(connectionConfig(dsn, options));
}

/** One statement on a pool or client; a TF400/TF404/TF409 refusal is thrown as the client's error. */
export async function query(db, text, values = []) {
  try {
    return await db.query({ text, values, types: TYPES });
  } catch (err) {
    throw toClientError(err);
  }
}

/**
 * `SELECT <columns> FROM taskforge.<fn>(name => $1, ...)` for the arguments that are not
 * undefined (the function's defaults apply to the others). `casts` gives a type per name
 * (`{payload: 'jsonb'}`: give such values as JSON text, since node-postgres sends a JS array as
 * a PostgreSQL array). Names and casts come from the caller's code, never from input.
 */
export function namedCall(fn, args, { columns = '*', casts = {} } = {}) {
  const names = [];
  const values = [];
  for (const [name, value] of Object.entries(args)) {
    if (value === undefined) continue;
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not an argument name: ${name}`);
    values.push(value);
    names.push(`${name} => $${values.length}${casts[name] ? `::${casts[name]}` : ''}`);
  }
  return { text: `SELECT ${columns} FROM taskforge.${fn}(${names.join(', ')})`, values };
}
