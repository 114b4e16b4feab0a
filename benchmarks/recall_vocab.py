"""The words the recall benchmark's archive is made of (``benchmarks/recall_corpus.py``):
services, their settings with the English and Chinese ways of naming them, features, tools,
reasons, time windows, errors, and the filler's prose."""

from __future__ import annotations

__all__ = [
    "EN_WORDS",
    "ERRORS",
    "EVENTS",
    "FEATURES",
    "NOUNS",
    "REASONS",
    "SERVICES",
    "SETTINGS",
    "TOOLS",
    "VERBS",
    "WINDOWS",
    "ZH_PHRASES",
]


def _split(text: str) -> list[str]:
    return text.split()


_PRE = _split(
    """billing search auth ledger invoice catalog inventory checkout payments notify gateway
    profile report metrics scheduler export media upload session pricing"""
)
_SUF = _split("""api worker service db cache proxy cron""")
SERVICES = [f"{p}-{s}" for p in _PRE for s in _SUF]
# key, English paraphrase, Chinese name (the answer's), Chinese paraphrase (the question's)
SETTINGS: list[tuple[str, str, str, str, str]] = [
    ("pool_size", "connection pool", "连接池大小", "连接池容量", "n"),
    ("max_connections", "connection cap", "最大连接数", "连接上限", "n"),
    ("timeout_ms", "request timeout", "超时时间", "超时", "ms"),
    ("retry_limit", "number of retries", "重试次数", "重试几次", "small"),
    ("batch_size", "batch size", "批量大小", "每批多少条", "n"),
    ("cache_ttl", "cache expiry", "缓存过期时间", "缓存多久过期", "s"),
    ("worker_count", "number of workers", "工作进程数", "进程开几个", "small"),
    ("queue_depth", "queue length", "队列长度", "队列能排多长", "n"),
    ("heap_limit", "memory ceiling", "内存上限", "内存最多给多少", "mb"),
    ("rate_limit", "requests per second cap", "限流阈值", "限流设的值", "n"),
    ("read_timeout", "read deadline", "读取超时", "读超时", "ms"),
    ("flush_interval", "flush period", "刷新间隔", "多久刷新一次", "s"),
    ("shard_count", "number of shards", "分片数量", "分几个片", "small"),
    ("replica_count", "replicas", "副本数", "几个副本", "small"),
]
FEATURES: list[tuple[str, str, str]] = [
    ("retry_backoff", "retry backoff", "重试退避"),
    ("rate_limiter", "rate limiting", "限流"),
    ("token_refresh", "token refresh", "令牌刷新"),
    ("csv_export", "CSV export", "CSV 导出"),
    ("webhook_verify", "webhook signature check", "Webhook 签名校验"),
    ("schema_migrate", "schema migration", "表结构迁移"),
    ("dedupe", "duplicate detection", "去重"),
    ("audit_log", "audit trail", "审计日志"),
    ("pagination", "paging of results", "分页"),
    ("currency_round", "currency rounding", "金额取整"),
]
TOOLS = _split(
    """postgres mysql redis memcached kafka rabbitmq nats sqlite minio s3 nginx envoy celery
    temporal clickhouse elasticsearch"""
)
REASONS: list[tuple[str, str]] = [
    ("it keeps ordering per key", "它能保证同一个键的顺序"),
    ("the team already runs it in production", "团队已经在生产环境用它"),
    ("its client library handles reconnects", "它的客户端能自动重连"),
    ("it needs no extra cluster", "不需要额外的集群"),
    ("the licence is compatible", "许可证没有问题"),
    ("backups are simpler", "备份更简单"),
    ("latency stayed under two milliseconds in the load test", "压测时延迟一直低于两毫秒"),
    ("it supports transactions across tables", "它支持跨表事务"),
]
WINDOWS: list[tuple[str, str]] = [
    ("on Friday afternoons", "周五下午"),
    ("during the month-end close", "月底结账期间"),
    ("before 9 am UTC", "北京时间下午五点之前"),
    ("while the nightly backup runs", "夜间备份运行的时候"),
    ("in the first week of a release", "发版后的第一周"),
]
ERRORS = [
    ("connection reset by peer", "对端重置了连接"),
    ("certificate has expired", "证书已过期"),
    ("deadlock detected while updating rows", "更新行时检测到死锁"),
    ("disk quota exceeded on /var/lib", "/var/lib 磁盘配额已满"),
    ("upstream returned 502 after 30 s", "上游 30 秒后返回 502"),
    ("schema version mismatch", "表结构版本不一致"),
    ("too many open files", "打开的文件太多"),
]
EVENTS = ["handled request", "flushed batch", "reloaded config", "cache miss"]
VERBS = _split("""load parse build fetch render merge verify compute resolve flush""")
NOUNS = _split("""invoice cart token report batch ledger profile quota price webhook""")
EN_WORDS = _split(
    """the request looks fine but the worker keeps restarting after a deploy so I checked the logs
    and the metrics dashboard again latency is higher than last week and the cache hit ratio
    dropped we should look at the config and the recent commits before we roll back"""
)
ZH_PHRASES = _split(
    """我看了一下日志 这个服务最近重启了几次 先检查一下配置 再看监控面板 延迟比上周高
    缓存命中率下降了 可能和最近的提交有关 我们先别回滚 等测试跑完再说 部署之后一切正常
    需要再确认一下"""
)
