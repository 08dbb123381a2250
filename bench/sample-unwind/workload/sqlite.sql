-- The sqlite3 workload of the unwinding benchmark: inserts into indexed
-- tables, joins, sorts and aggregates, all in memory.
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
CREATE INDEX tb ON t(b);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 300000)
INSERT INTO t SELECT x, printf('k%08d', (x*7919)%300000), x*0.5 FROM n;
SELECT count(*), sum(length(b)) FROM t WHERE b LIKE 'k0001%';
SELECT b, count(*) FROM t GROUP BY substr(b, 1, 5) ORDER BY 2 DESC LIMIT 3;
SELECT count(*) FROM t AS x JOIN t AS y ON x.b = y.b WHERE x.a % 3 = 0;
SELECT sum(c) FROM (SELECT c FROM t ORDER BY b DESC, c LIMIT 200000);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 2000000)
SELECT count(*), sum(x*x % 7), max(printf('%x', x)) FROM n;
