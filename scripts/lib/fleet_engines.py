"""Reads a `dendro export` dataset with a real engine and prints, per
source and stream, the figures tests/rewrite/fleet_engines.rs compares
with `dendro cat`: rows, a sum, min and max `ts` (ns).

    python fleet_engines.py duckdb DATASET SPEC      totals through DuckDB
    python fleet_engines.py spark DATASET SPEC       totals through Spark (local mode)
    python fleet_engines.py onehour DATASET QUERY    DuckDB, one host over one hour

SPEC is JSON: {stream: [column, "scalar" | "list" | null]}; a scalar column
is summed, a list column's lengths are summed (histograms are lists), null
sums nothing. The files read are the ones `_manifest.parquet` lists, never
a listing of the tree: a run in progress or killed is not seen.
QUERY is JSON {"stream", "source_uuid", "from_ns", "to_ns"}; the answer is
the rows counted and the number of files read (those the manifest chose).
"""
import json
import sys


def duckdb_totals(root, spec):
    import duckdb

    con = duckdb.connect()
    out = {}
    for stream, (column, kind) in spec.items():
        files = con.execute(
            "SELECT list(DISTINCT ? || '/' || path ORDER BY ? || '/' || path) "
            "FROM read_parquet(?) WHERE stream = ?",
            [root, root, root + "/_manifest.parquet", stream],
        ).fetchone()[0]
        if not files:
            continue
        if kind == "scalar":
            summed = f'CAST(sum("{column}") AS VARCHAR)'
        elif kind == "list":
            summed = f'CAST(sum(len("{column}")) AS VARCHAR)'
        else:
            summed = "NULL"
        rows = con.execute(
            f"SELECT source_uuid, count(*), {summed}, epoch_ns(min(ts)), epoch_ns(max(ts)) "
            "FROM read_parquet(?, hive_partitioning = true, union_by_name = true) "
            "GROUP BY ALL",
            [files],
        ).fetchall()
        for uuid, n, s, lo, hi in rows:
            out[f"{uuid}/{stream}"] = [str(n), s, str(lo), str(hi)]
    return out


def spark_totals(root, spec):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("dendro-fleet-check")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Spark has no nanosecond timestamp: `ts` is read as its int64.
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.sql.parquet.mergeSchema", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # Spark (Hadoop's listing) skips every file whose name starts with `_`,
    # even one named outright: the driver reads the manifest itself.
    with open(root + "/_manifest.json") as f:
        manifest = json.load(f)
    out = {}
    for stream, (column, kind) in spec.items():
        files = sorted({root + "/" + f["path"] for f in manifest["files"] if f["stream"] == stream})
        if not files:
            continue
        frame = spark.read.option("basePath", root).option("mergeSchema", "true").parquet(*files)
        frame.createOrReplaceTempView("rows")
        if kind == "scalar":
            summed = f"CAST(sum(`{column}`) AS STRING)"
        elif kind == "list":
            summed = f"CAST(sum(size(`{column}`)) AS STRING)"
        else:
            summed = "CAST(NULL AS STRING)"
        query = (
            f"SELECT source_uuid, count(*) AS n, {summed} AS s, min(ts) AS lo, max(ts) AS hi "
            "FROM rows GROUP BY source_uuid"
        )
        for r in spark.sql(query).collect():
            out[f"{r['source_uuid']}/{stream}"] = [str(r["n"]), r["s"], str(r["lo"]), str(r["hi"])]
    spark.stop()
    return out


def one_hour(root, query):
    import duckdb

    con = duckdb.connect()
    files = con.execute(
        "SELECT list(DISTINCT ? || '/' || path) FROM read_parquet(?) "
        "WHERE stream = ? AND source_uuid = ? "
        "AND epoch_ns(ts_max) >= ? AND epoch_ns(ts_min) < ?",
        [
            root,
            root + "/_manifest.parquet",
            query["stream"],
            query["source_uuid"],
            query["from_ns"],
            query["to_ns"],
        ],
    ).fetchone()[0] or []
    rows = con.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true, union_by_name = true) "
        "WHERE source_uuid = ? AND epoch_ns(ts) >= ? AND epoch_ns(ts) < ?",
        [files, query["source_uuid"], query["from_ns"], query["to_ns"]],
    ).fetchone()[0] if files else 0
    # read_parquet opens the files it is given and no other: the ones the
    # manifest chose. (This DuckDB's JSON profile, which counts them too,
    # is written only for some statements, so it is not relied on.)
    return {"rows": rows, "files_read": len(files)}


def main():
    mode, root, arg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    if mode == "duckdb":
        print(json.dumps(duckdb_totals(root, arg), sort_keys=True))
    elif mode == "spark":
        print(json.dumps(spark_totals(root, arg), sort_keys=True))
    elif mode == "onehour":
        print(json.dumps(one_hour(root, arg)))
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
